"""skillos.training: curator training (SkillOS Algorithm 1 with TRL GRPO), the text-space skill
optimizer and the launchers. Heavy libraries (torch, trl, peft) are imported inside the code that
needs them, never at package import."""
