"""The bridge to OpenSpiel: exact exploitability / NashConv of any policy here, in Kuhn and Leduc poker.

OpenSpiel (``pip install open-spiel``, the ``openspiel`` extra) holds the reference
implementations of both games and the best-response code; this module only maps between them
and this project's env:

* **deals**: OpenSpiel's chance outcomes are card ids; Kuhn's card c is rank ``"JQK"[c]``,
  Leduc's is ``"JQK"[c // 2]`` (two suits, which never matter). A deal becomes the game's
  ``deal`` config (player_0's card, player_1's card, the board card), so the env replays it;
* **actions**: Kuhn's ``Pass`` (0) is ``check`` or ``fold`` and ``Bet`` (1) is ``bet`` or
  ``call``; Leduc's ``Fold`` (0) is ``fold``, ``Call`` (1) is ``check`` or ``call``, ``Raise``
  (2) is ``bet`` or ``raise``. At every decision exactly one legal word maps to each legal id;
* **information states**: a policy here sees the seat's observation and info; OpenSpiel keys
  its tabular policies by information-state strings. :func:`check_mapping` walks every history
  of the OpenSpiel tree and checks that the seat to move, the legal actions, the returns and
  the information partition agree (an OpenSpiel information state always gives the same
  observation here, and two observations are equal only for the same OpenSpiel information
  state up to Leduc's suits).

A policy here is a function ``policy_fn(env, agent) -> {action word: probability}`` over the
seat's ``legal_action_list`` (probabilities are renormalised; missing words get 0). Adapters:
:func:`from_strategy` (a function of ``game_state``, e.g. the scripted baselines'
``action_probabilities``), :func:`from_table` (a tabular policy keyed by :func:`info_key`),
:func:`from_sampling` (any :class:`socialgym_agents.base.BasePolicy`, its distribution estimated by
sampling) and :func:`from_llm_scores` (an LLM policy in scoring mode: ``softmax(log p /
temperature)`` over the log-probabilities of the legal replies). :func:`exploitability` and
:func:`nash_conv` fill OpenSpiel's ``TabularPolicy`` from ``policy_fn``, one call per
information state, and run OpenSpiel's exact best responses.
"""
from __future__ import annotations

import functools
import math
from collections import Counter
from typing import Callable, Iterator

import socialgym_env

# game id -> (OpenSpiel game name, card id -> rank, {action word: OpenSpiel action id})
GAMES = {
    "kuhn_poker": ("kuhn_poker", lambda card: "JQK"[card], {"check": 0, "fold": 0, "bet": 1, "call": 1}),
    "leduc_poker": ("leduc_poker", lambda card: "JQK"[card // 2],
                    {"fold": 0, "check": 1, "call": 1, "bet": 2, "raise": 2}),
}
BRIDGE_SEED = 0         # the env seed of every replay: only the display names depend on it

PolicyFn = Callable[[object, str], dict]


def _spec(game_id: str):
    if game_id not in GAMES:
        raise ValueError(f"the OpenSpiel bridge knows {', '.join(GAMES)}, not {game_id!r}")
    return GAMES[game_id]


def openspiel_game(game_id: str):
    import pyspiel
    return pyspiel.load_game(_spec(game_id)[0])


# ------------------------------------------------------------------ walking both trees together
def _full_deal(game_id: str, ranks: list) -> str:
    """The ``deal`` config for the cards dealt so far; an undealt board card is any card left
    (nobody has seen it yet, so it changes nothing before it is dealt)."""
    cls = socialgym_env.game_class(game_id)
    needed = 2 + len(cls.bet_sizes) - 1
    left = list((Counter(cls.deck) - Counter(ranks)).elements())
    return "".join(ranks + left[:needed - len(ranks)])


def replay(game_id: str, ranks: list, words: list):
    """This project's env after dealing ``ranks`` and playing the action ``words``."""
    env = socialgym_env.make(game_id, invalid_action="raise", deal=_full_deal(game_id, ranks),
                             log_observations=False)
    env.reset(seed=BRIDGE_SEED)
    for word in words:
        env.step(word)
    return env


def word_for(game_id: str, env, agent: str, action_id: int) -> str:
    """The legal action word of ``agent`` that OpenSpiel's ``action_id`` is."""
    mapping = _spec(game_id)[2]
    matches = [w for w in env.infos[agent]["legal_action_list"] if mapping[w] == action_id]
    if len(matches) != 1:
        raise AssertionError(f"OpenSpiel action {action_id} is {matches} here, not one legal word")
    return matches[0]


@functools.lru_cache(maxsize=None)
def walk(game_id: str) -> tuple:
    """Every non-chance history of the OpenSpiel tree, as (OpenSpiel state, dealt ranks, action
    words so far); terminal states included. Computed once per game (9,300 histories in Leduc)."""
    return tuple(_walk(game_id))


def _walk(game_id: str) -> Iterator[tuple]:
    to_rank = _spec(game_id)[1]
    root = openspiel_game(game_id).new_initial_state()
    stack = [(root, [], [])]
    while stack:
        state, ranks, words = stack.pop()
        if state.is_chance_node():
            for outcome, _ in state.chance_outcomes():
                stack.append((state.child(outcome), ranks + [to_rank(outcome)], words))
            continue
        yield state, ranks, words
        if state.is_terminal():
            continue
        env = replay(game_id, ranks, words)
        agent = env.agent_selection
        for action in state.legal_actions():
            stack.append((state.child(action), ranks, words + [word_for(game_id, env, agent, action)]))


def info_key(info: dict) -> tuple:
    """A hashable information-state key from a seat's ``game_state``: own card, board, betting."""
    gs = info["game_state"]
    return (gs["my_card"], tuple(gs["board"]), tuple(tuple(r) for r in gs["history"]))


def _suitless(key: str) -> str:
    """An OpenSpiel Leduc information-state string with card ids replaced by ranks."""
    import re
    return re.sub(r"\[(Private|Public): (\d+)\]", lambda m: f"[{m.group(1)}: {'JQK'[int(m.group(2)) // 2]}]", key)


def check_mapping(game_id: str) -> dict:
    """Walk every history and check the mapping (raises AssertionError on the first mismatch).
    Returns counts: histories, decisions, terminals, information states (OpenSpiel's, ours)."""
    os_to_ours: dict = {}
    ours_to_os: dict = {}
    counts = Counter()
    for state, ranks, words in walk(game_id):
        env = replay(game_id, ranks, words)
        counts["histories"] += 1
        if state.is_terminal():
            assert env.state.result is not None, f"{words}: OpenSpiel ended the hand, the env did not"
            ours = [env.state.result.scores[a] for a in env.possible_agents]
            assert ours == list(state.returns()), f"{ranks} {words}: returns {ours} != {state.returns()}"
            counts["terminals"] += 1
            continue
        player = state.current_player()
        agent = env.agent_selection
        assert agent == env.possible_agents[player], f"{words}: {agent} to move, OpenSpiel says {player}"
        mapping = _spec(game_id)[2]
        legal = sorted(mapping[w] for w in env.infos[agent]["legal_action_list"])
        assert legal == sorted(state.legal_actions()), f"{words}: legal {legal} != {state.legal_actions()}"
        os_key = state.information_state_string(player)
        ours = env.observe(agent)["text"], info_key(env.infos[agent])
        assert os_to_ours.setdefault(os_key, ours) == ours, f"{os_key}: two different observations here"
        ours_to_os.setdefault(ours, set()).add(_suitless(os_key))
        counts["decisions"] += 1
    for ours, keys in ours_to_os.items():
        assert len(keys) == 1, f"one observation here for OpenSpiel states {sorted(keys)}"
    counts["openspiel_information_states"] = len(os_to_ours)
    counts["information_states"] = len(ours_to_os)
    return dict(counts)


# ------------------------------------------------------------------ policies -> OpenSpiel
def tabular_policy(game_id: str, policy_fn: PolicyFn):
    """OpenSpiel's ``TabularPolicy`` holding ``policy_fn``'s distribution at every information
    state (``policy_fn`` is called once per information state, on one of its histories)."""
    from open_spiel.python import policy as os_policy
    game = openspiel_game(game_id)
    table = os_policy.TabularPolicy(game)
    mapping = _spec(game_id)[2]
    filled = set()
    for state, ranks, words in walk(game_id):
        if state.is_terminal():
            continue
        key = state.information_state_string(state.current_player())
        if key in filled:
            continue
        filled.add(key)
        env = replay(game_id, ranks, words)
        agent = env.agent_selection
        legal = env.infos[agent]["legal_action_list"]
        probabilities = normalised(policy_fn(env, agent), legal)
        row = table.policy_for_key(key)
        row[:] = 0.0
        for word, p in probabilities.items():
            row[mapping[word]] += p
    return table


def normalised(probabilities: dict, legal: list) -> dict:
    """``probabilities`` restricted to ``legal`` and summing to 1 (uniform if they sum to 0)."""
    weights = {w: max(0.0, float(probabilities.get(w, 0.0))) for w in legal}
    total = sum(weights.values())
    if total <= 0:
        return {w: 1 / len(legal) for w in legal}
    return {w: p / total for w, p in weights.items()}


def exploitability(game_id: str, policy_fn: PolicyFn) -> float:
    """OpenSpiel's exploitability (mean over both seats of the best response's gain, chips)."""
    from open_spiel.python.algorithms import exploitability as os_exploitability
    return float(os_exploitability.exploitability(openspiel_game(game_id), tabular_policy(game_id, policy_fn)))


def nash_conv(game_id: str, policy_fn: PolicyFn) -> float:
    """OpenSpiel's NashConv (the sum over seats of the best response's gain, chips)."""
    from open_spiel.python.algorithms import exploitability as os_exploitability
    return float(os_exploitability.nash_conv(openspiel_game(game_id), tabular_policy(game_id, policy_fn)))


def expected_chips(game_id: str, player_0: PolicyFn, player_1: PolicyFn) -> list:
    """The exact expected chips of each seat when ``player_0`` and ``player_1`` play each other
    (OpenSpiel's ``expected_game_score`` over every deal and action)."""
    from open_spiel.python.algorithms import expected_game_score
    game = openspiel_game(game_id)
    tables = [tabular_policy(game_id, player_0), tabular_policy(game_id, player_1)]
    return [float(v) for v in expected_game_score.policy_value(game.new_initial_state(), tables)]


# ------------------------------------------------------------------ adapters
def uniform(env, agent) -> dict:
    return {w: 1.0 for w in env.infos[agent]["legal_action_list"]}


def from_strategy(strategy: Callable[[dict], dict]) -> PolicyFn:
    """A function of the seat's ``game_state`` (the baselines' ``action_probabilities``)."""
    return lambda env, agent: strategy(env.infos[agent]["game_state"])


def from_table(table: dict, default: Callable = uniform) -> PolicyFn:
    """A dict ``info_key(info) -> {word: probability}``; unseen keys use ``default``."""
    def policy_fn(env, agent):
        key = info_key(env.infos[agent])
        return table[key] if key in table else default(env, agent)
    return policy_fn


def from_sampling(policy, samples: int = 200) -> PolicyFn:
    """Any BasePolicy: the frequencies of its actions over ``samples`` seat keys (exact for a
    pure policy; a mixed one's estimate has standard error at most 0.5 / sqrt(samples))."""
    def policy_fn(env, agent):
        observation, info = env.observe(agent), env.infos[agent]
        counts = Counter()
        for i in range(samples):
            key = (f"bridge-{i}", agent)
            policy.reset(key, seed=i)
            counts[policy.act(observation, info, key=key).action] += 1
            policy.release(key)
        return {w: n / samples for w, n in counts.items()}
    return policy_fn


def softmax(scores: dict, temperature: float = 1.0) -> dict:
    """{word: exp(score / T)} normalised; ``scores`` are log-probabilities."""
    top = max(scores.values())
    weights = {w: math.exp((s - top) / temperature) for w, s in scores.items()}
    total = sum(weights.values())
    return {w: x / total for w, x in weights.items()}


def reply_word(reply: str, info: dict) -> str:
    """The action word of a legal reply (``{"action_type": "bet", "argument": ""}`` -> ``bet``)."""
    from socialgym_agents.llm.parsing import parse_reply
    parsed = parse_reply(reply, info)
    return f"{parsed['action_type']} {parsed['argument']}".strip()


def from_llm_scores(llm_policy, temperature: float = 1.0) -> PolicyFn:
    """An :class:`socialgym_agents.llm.policy.LLMPolicy` in scoring mode (``mode=score``): the softmax of
    its legal replies' log-probabilities, the distribution it samples from at ``temperature``."""
    from socialgym_agents.base import Request

    def policy_fn(env, agent):
        info = env.infos[agent]
        key = (f"bridge-{id(env)}", agent)
        llm_policy.reset(key, seed=BRIDGE_SEED)
        decision = llm_policy.act_batch([Request(key, env.observe(agent), info, env.prompt_parts(agent))])[0]
        llm_policy.release(key)
        attempt = decision.meta["attempts"][0]
        if "scores" not in attempt:
            raise ValueError("the LLM policy did not score the legal replies: use mode=score")
        return softmax({reply_word(reply, info): score for reply, score in attempt["scores"]}, temperature)

    return policy_fn
