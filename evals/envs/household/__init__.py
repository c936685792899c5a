"""The household environment (env.name: household): ALFWorld tasks, played in rooms of the
TextWorld engine. environment.py is the environment object (envs/registry.py); heuristic/ holds
its no-model executor and curator and the grammar they read and write skills with.

The engine itself (scene data, game generator, the fast paths, `AlfworldEnv`) stays in
envs/alfworld/: it is what household plays, and the slate environment (envs/slate/) plays the
same games on it, so it is shared by two environments rather than owned by one; a folder per
environment and one for the engine they share leaves every file one obvious home.
"""
