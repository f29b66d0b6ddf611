"""Exported rows hold the whole chat the policy was given, token for token, in every game.

Every seat of one short episode per game is played through a real :class:`LLMPolicy` on the
embedded SmolLM2 backend (its tokenizer, chat template and ``fits``; a small ``context`` so the
history is trimmed and conversations restart), whose generation is replaced by a scripted
player's move (sometimes after a junk reply, so re-asks happen). The backend records every chat
it is sent. Seat 0 stays an LLM seat in the log; the other seats' model logs are removed, so the
export must rebuild their prompts as the ``as_spec`` policy would have been prompted. Each row
is then compared with the chat the backend received for that decision's played reply.
"""
import random

import pytest

import socialgym_env
from socialgym_agents.jobs import EpisodeJob, PolicyPool
from socialgym_agents.llm.config import parse_options
from socialgym_agents.llm.hf_backend import HFBackend, chat_ids
from socialgym_agents.llm.policy import THINK_NOTE, LLMPolicy
from socialgym_agents.llm.prompt import OMIT_MARKER, SAME_ACTIONS
from socialgym_agents.llm.backend import Reply
from socialgym_agents.llm.transcript import played_reply
from socialgym_agents.registry import make_policy
from socialgym_agents.runner import run_jobs
from socialgym_training.export import decision_rows

# A small context: long games trim their history and restart their conversations.
OPTIONS = "context=900&max_new_tokens=32&max_retries=1"
LLM_SPEC = "smollm2?" + OPTIONS
GAMES = [g["id"] for g in socialgym_env.list_games()]
STEPS = 48          # engine turn cap per episode


class RoutedBackend(HFBackend):
    """SmolLM2's tokenizer and fits, replies from a scripted player; records each chat sent."""

    def __init__(self, config, junk_rate: float):
        super().__init__("smollm2", config)
        self.answers, self.sent, self.junk_rate = {}, {}, junk_rate
        self.rng = random.Random(7)

    def complete(self, items):
        replies = []
        for item in items:
            attempts = self.sent[item.key][-1]
            attempts.append(list(item.messages))
            junk = len(attempts) == 1 and self.rng.random() < self.junk_rate
            replies.append(Reply("I would rather not say." if junk else self.answers[item.key]))
        return replies


class Routed:
    """An LLM policy whose moves a scripted player makes (the prompts are the LLM policy's own)."""

    needs_prompt_parts = True

    def __init__(self, junk_rate: float, spec: str = LLM_SPEC):
        options = parse_options(spec.partition("?")[2])
        self.llm = LLMPolicy(RoutedBackend(options, junk_rate), options, spec)
        self.driver = make_policy("scripted:random", seed=3)

    def reset(self, key, seed=None):
        self.llm.reset(key, seed)
        self.driver.reset(key, seed)

    def release(self, key):
        self.llm.release(key)

    def act_batch(self, requests):
        for request, decision in zip(requests, self.driver.act_batch(requests)):
            self.llm.backend.answers[request.key] = played_reply({"action": decision.action})
            self.llm.backend.sent.setdefault(request.key, []).append([])
        return self.llm.act_batch(requests)


def play_logged(game: str, spec: str = LLM_SPEC):
    """One episode, seat 0 logged by ``spec``'s policy, the other seats' model logs removed;
    and the chats each seat's backend received per decision."""
    n = len(socialgym_env.make(game).possible_agents)
    learner, others = Routed(0.25, spec), Routed(0.0, spec)
    pool = PolicyPool(prebuilt={spec: learner, "scripted:random": others})
    job = EpisodeJob(game, 5, [spec] + ["scripted:random"] * (n - 1), config={"max_steps": STEPS})
    (record,) = run_jobs([job], pool, max_concurrent_episodes=1)
    assert record["finished"] and not record.get("failed"), (game, record.get("failure"))
    for turn in record["turns"]:          # seats without a model log no prompts
        if turn["agent"] != "player_0" or not turn.get("agent_meta"):
            turn.pop("agent_meta", None)
    return record, {**learner.llm.backend.sent, **others.llm.backend.sent}


@pytest.fixture(scope="module")
def played(tokenizer):
    """game -> (the episode record, the chats each seat's backend received per decision)."""
    return {game: play_logged(game) for game in GAMES}


@pytest.mark.parametrize("game", GAMES)
def test_rows_are_the_chat_the_policy_was_given(game, played, tokenizer):
    check_rows(*played[game], LLM_SPEC, tokenizer)


def test_think_mode_rows_end_with_the_note_the_policy_sent(tokenizer):
    """think=N appends the think-then-act note to each prompt: a logged or rebuilt row holds it."""
    spec = LLM_SPEC + "&think=8"
    record, sent = play_logged("prisoners_dilemma", spec)
    check_rows(record, sent, spec, tokenizer)
    rows = decision_rows([record], as_spec=spec)
    assert {row["prompt_as"] for row in rows} == {"logged", spec}
    note = "\n" + THINK_NOTE.format(tokens=8)       # a re-asked row ends with the re-ask after it
    assert all(any(m["content"].endswith(note) for m in row["prompt"] if m["role"] == "user") for row in rows)


def check_rows(record: dict, sent: dict, spec: str, tokenizer) -> None:
    rows = decision_rows([record], as_spec=spec)
    assert len(rows) == len(record["turns"]) > 0
    by_seat: dict = {}
    for row in sorted(rows, key=lambda r: r["turn_index"]):
        by_seat.setdefault(row["seat"], []).append(row)
    for seat, seat_rows in by_seat.items():
        decisions = sent[(record["episode_id"], seat)]
        # the turn cap may cut a simultaneous round after a seat decided: that move is not logged
        assert 0 <= len(decisions) - len(seat_rows) <= 1, seat
        for row, attempts in zip(seat_rows, decisions):
            assert row["prompt_as"] == ("logged" if seat == "player_0" else spec)
            # the played reply was written after the last chat sent for this decision
            assert chat_ids(tokenizer, row["prompt"]) == chat_ids(tokenizer, attempts[-1]), (seat, row["turn_index"])
            assert row["prompt"][0]["content"].startswith("Here is the description of the game:") or \
                "Here is the description of the game:" in row["prompt"][0]["content"]
            # a row never refers to an action block it does not contain
            if any(SAME_ACTIONS in m["content"] for m in row["prompt"]):
                assert any("Your available action type(s)" in m["content"] for m in row["prompt"] if m["role"] == "user")


def test_the_small_context_trims_and_restarts(played):
    """The comparison above covers trimmed histories and restarted conversations."""
    marker = OMIT_MARKER.split("{n}")[1]
    trimmed = restarted = reasked = 0
    for record, sent in played.values():
        for decisions in sent.values():
            for earlier, later in zip(decisions, decisions[1:]):
                restarted += len(later[0]) == 1 and len(earlier[0]) > 1
            for attempts in decisions:
                trimmed += any(marker in m["content"] for m in attempts[0])
                reasked += len(attempts) > 1
    assert trimmed and restarted and reasked
