"""What every weight trainer shares: the GRPO base (grpo.py), TRL compatibility, the supervised
warm-up, launch and its plan, the GPU memory plan, the prompt cap, the learning-signal check and
adapter serving."""
