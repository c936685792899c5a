"""Where the curator's trainer takes the keys only it reads (`gate check --trace`): the groups of
|G| tasks a rollout plays, their order, the curator's view of each game, and the reward's weights.
The gates ask these first for a config whose skillgate.trainer is the curator's (an eval config's too:
the default trainer; skillos.registry.METHODS); a None leaves the key to their generic resolvers.
"""

from __future__ import annotations

from skillos.evals.curation import curator_input
from skillos.evals.envs.registry import environment
from skillos.training.curator.env import RolloutState, env_with_state, make_setup
from skillos.training.curator.trainer import RewardFunction
from skillos.tracing import equal, probe_trajectory, resolver, row, steps_row


@resolver(r"^training\.group_size$")
def group_size(t, key, value):
    args = t.args()
    low, high = environment(t.cfg).group_sizes(t.cfg)
    arrived = args.max_tool_calling_iterations + 1
    ok = equal(value, arrived) and equal(value, high)
    return row(key, value, "CuratorEnv rows (|G| games per rollout) and GRPOConfig.max_tool_calling_iterations + 1",
               arrived, f"groups of {low}-{high} tasks; TRL allows {args.max_tool_calling_iterations} tool calls",
               applied=ok)


@resolver(r"^training\.grouping$")
def grouping(t, key, value):
    return row(key, value, "training/curator/groups.build_groups(grouping=) in training/curator/trainer.dataset_rows",
               value, "read as configured when the rows are built")


@resolver(r"^training\.curriculum$")
def curriculum(t, key, value):
    args = t.args()
    unshuffled = getattr(args, "shuffle_dataset", True) is False
    return row(key, value, "training/curator/groups.build_groups(curriculum=) and GRPOConfig.shuffle_dataset", value,
               f"shuffle_dataset {getattr(args, 'shuffle_dataset', None)}", applied=unshuffled == (value != "none"))


@resolver(r"^training\.max_instructions$")
def max_instructions(t, key, value):
    """The bound as the rollouts' repo writes apply it (the setup's capacity)."""
    setup = make_setup(t.cfg, [])
    setup.close()  # engine workers, if the config starts any
    held = setup.capacity
    return row(key, value, "training/curator/env.py CuratorEnv: each write through evals/curation.apply_op(capacity=)",
               None if held is None else held.most)


@resolver(r"^curator\.history_length$")
def curator_history(t, key, value):
    """The trajectory steps the training curator reads after each game: a probe game of 50 steps
    rendered through the training rollout's setup (an eval's curator is the gates' to trace)."""
    if not t.cfg.training.is_set():
        return None
    setup = make_setup(t.cfg, [])
    text = curator_input(probe_trajectory(), 1, 3, setup.history_length)
    return steps_row(key, value, "training/curator/env.py CuratorEnv: the curator's input", text)


@resolver(r"^reward\.lambda_(?P<term>fc|cnt|comp)$")
def reward(t, key, value, term):
    weights = reward_probe(t)
    return row(key, value, "training/curator/trainer.RewardFunction: the weight of r_" + term +
               " in the reward of a scripted rollout scoring 1 on that term only", weights[term])


def reward_probe(t) -> dict:
    """Each weight as the real reward function applies it: three scripted rollouts that score
    0 on r_task and 1 on exactly one other term; each total is that term's weight."""
    def build():
        class Judge:
            def judge(self, text):
                return True

        def env(ops_valid=0, ops_total=0, contents=(), input_words=0):
            return env_with_state(RolloutState(["p1", "p2", "p3"], "probe", positions=[True, False, False],
                                               ops_valid=ops_valid, ops_total=ops_total, contents=list(contents),
                                               input_words=input_words, calls=2))
        envs = [env(1, 1), env(contents=["a skill"]), env(input_words=10)]
        completions = [[{"role": "assistant", "content": ""}] for _ in envs]
        totals = RewardFunction(t.cfg, Judge(), lambda _line: None)(
            [[{"role": "user", "content": "probe"}]] * 3, completions, environments=envs, group=[0, 1, 2])
        return dict(zip(("fc", "cnt", "comp"), totals))
    return t.cached("reward", build)
