"""skillos.training: a package per method (curator/: SkillOS's GRPO curator; selector/: SkillGate's
selector; textopt/: SkillOpt's text-space optimizer and SkillOpt-Sleep), common/ for what every
weight trainer shares, canary/ for the learning-canary framework, and the trainer registry. Heavy
libraries (torch, trl, peft) are imported inside the code that needs them, never at package import."""
