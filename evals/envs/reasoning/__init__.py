"""The reasoning environment (env.name: reasoning): AIME / GPQA-Diamond / DeepMath from local
files, offline generated problem sets, graded with math-verify. See environment.py."""
