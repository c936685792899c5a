"""The SkillOS curator method: GRPO over a curator that maintains the skill repo (trainer, its
rollouts and pipeline, the composite reward, groups, the curator environment, kept plays, rollouts
played ahead). Heavy libraries load inside the code that needs them."""
