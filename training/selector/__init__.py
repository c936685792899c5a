"""The SkillGate selector method: GRPO with selection credit over skill slates (its trainer, the
credit of a read, the supervised starts and the BC/DPO baselines). It imports the shared GRPO
plumbing from training.common, never the curator's package."""
