"""Text-space skill optimization: SkillOpt's optimizer (document mode, reflection, candidates, the
textual learning rate, the slow update) and SkillOpt-Sleep (`sleep/`). No weights are trained."""
