"""The slate environment (env.name: slate, SkillGate): the household's ALFWorld games, each played
with a slate of skills the executor chooses what to read from. slates.py builds, freezes and
plays the slates (SlateEnv, the selection metrics), skills.py says what each of a slate's four
categories is, executor.py is the model executor that reads through read_skill, and
environment.py is the environment object (envs/registry.py)."""
