"""Search (app/search.py): the query language, what matches and is marked, Workspace.search,
and `hearth search`."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from pathlib import Path

import pytest

from app.documents import Documents
from app.paths import Paths
from app.search import (
    HINT,
    MessageGroup,
    Query,
    SearchError,
    SearchResults,
    Term,
    highlights,
    matches,
    parse_query,
    search_workspace,
    snippet,
    summary,
)
from app.workspace import Workspace
from core import kinds
from core.identity import Identity
from core.objects import build
from storage import Message
from tests.support import FakeClock, channels

from .conftest import Hearth

# The query language ------------------------------------------------------------------------------

def test_words_and_the_last_term_as_a_prefix() -> None:
    query = parse_query("  meet   tom ")
    assert query.terms == (Term("meet"), Term("tom", prefix=True))
    assert (query.channels, query.people, query.after, query.before) == ((), (), None, None)
    assert parse_query("tom in:#general").terms == (Term("tom", prefix=True),)
    # Pieces without a word in them find nothing and are left out.
    assert parse_query("meet - *").terms == (Term("meet", prefix=True),)
    assert parse_query("").empty and parse_query('  "" ').empty


def test_exact_phrases_never_match_by_prefix() -> None:
    assert parse_query('"exact phrase" tom').terms == (Term("exact phrase"),
                                                       Term("tom", prefix=True))
    assert parse_query('tom "exact phrase"').terms == (Term("tom"), Term("exact phrase"))
    assert parse_query('say "it was in:general').terms == (Term("say"),
                                                             Term("it was in:general"))
    assert Term("don't stop").tokens == ("don", "t", "stop")


def test_each_filter() -> None:
    query = parse_query("in:#general IN:random from:@ada From:bob after:2026-03-01 "
                        "before:2026-03-09 hello")
    assert query.channels == ("general", "random")
    assert query.people == ("ada", "bob")
    assert (query.after, query.before) == (date(2026, 3, 1), date(2026, 3, 9))
    assert query.terms == (Term("hello", prefix=True),)
    # The tightest of several dates counts.
    query = parse_query("after:2026-03-01 after:2026-03-03 before:2026-03-09 before:2026-03-07")
    assert (query.after, query.before) == (date(2026, 3, 3), date(2026, 3, 7))
    # Filters alone are a query; a colon that names no filter is part of a word.
    assert not parse_query("from:ada in:#general").empty
    assert parse_query("from:ada in:#general").terms == ()
    assert [t.text for t in parse_query("http://x.org at 10:30").terms] == [
        "http://x.org", "at", "10:30"]
    assert parse_query('"in:general"').channels == ()


def test_dates_are_local_days_and_both_exclusive() -> None:
    query = parse_query("after:2026-03-01 before:2026-03-05")
    since, until = query.bounds(UTC)
    assert since == int(datetime(2026, 3, 2, tzinfo=UTC).timestamp() * 1000)
    assert until == int(datetime(2026, 3, 5, tzinfo=UTC).timestamp() * 1000)
    plus2 = timezone(timedelta(hours=2))
    assert query.bounds(plus2)[1] == until - 2 * 3600 * 1000
    assert parse_query("after:1901-01-01").bounds(UTC)[0] == 0


@pytest.mark.parametrize(("query", "error"), [
    ("after:2026-13-01", "after: wants a date like 2026-03-01"),
    ("before:yesterday", "before: wants a date like 2026-03-01"),
    ("hello after:", "after: wants a date like 2026-03-01"),
    ("before:2026-3-1", "before: wants a date like 2026-03-01"),
    ("in:", "in: wants a channel, like in:#general"),
    ("in:#", "in: wants a channel, like in:#general"),
    ("from:", "from: wants a nickname, like from:ada"),
    ("from:@ x", "from: wants a nickname, like from:ada"),
    ("after:2026-03-04 before:2026-03-05", "no day is both after 2026-03-04 and before 2026-03-05"),
    ("after:9999-12-31", "after: no day comes after 9999-12-31"),
    ("caf\udce9", "the search query is not valid text"),
])
def test_bad_filters_are_one_line_errors(query: str, error: str) -> None:
    with pytest.raises(SearchError) as caught:
        parse_query(query)
    assert str(caught.value) == error


# What matches and what is marked ---------------------------------------------------------------

def _marked(text: str, *terms: Term) -> list[str]:
    return [text[start:end] for start, end in highlights(text, terms)]


def test_highlights_whole_words_ignoring_case_and_diacritics() -> None:
    text = "Meet at the Café tomorrow; the cafeteria is closed"
    assert _marked(text, Term("cafe")) == ["Café"]
    assert _marked(text, Term("CAFÉ"), Term("tom", prefix=True)) == ["Café", "tomorrow"]
    assert _marked(text, Term("caf", prefix=True)) == ["Café", "cafeteria"]
    assert _marked(text, Term("tom")) == []


def test_highlights_phrases_in_a_row_and_merges_overlaps() -> None:
    text = "quick brown fox, brown quick fox"
    assert _marked(text, Term("quick brown")) == ["quick brown"]
    assert _marked(text, Term("quick brown"), Term("brown fox")) == ["quick brown fox"]
    # Positions are codepoints: an emoji before a word does not shift the mark.
    assert _marked("\U0001f600 naïve plan", Term("naive")) == ["naïve"]


def test_matches_needs_every_term() -> None:
    assert matches("Design reviews", (Term("design"), Term("rev", prefix=True)))
    assert not matches("Design reviews", (Term("design"), Term("rev")))
    assert not matches("Design reviews", ())


def test_snippet_shows_the_first_match_of_a_long_message() -> None:
    text = "word " * 100 + "needle at the end\nsecond line"
    shown, spans = snippet(text, highlights(text, [Term("needle")]), width=60)
    assert shown.startswith("…") and len(shown) <= 62 and "\n" not in shown
    assert [shown[s:e] for s, e in spans] == ["needle"]
    assert snippet("short needle", [(6, 12)], width=60) == ("short needle", [(6, 12)])


def _message(channel: str, ts: int) -> Message:
    return Message(bytes([ts]) * 32, channel, b"k" * 32, "ada", ts, "text")


def test_summary_line() -> None:
    query = parse_query("plans")
    assert summary(SearchResults(query)) == 'No results for "plans"'
    groups = (MessageGroup("general", "general", (_message("general", 3), _message("general", 1))),
              MessageGroup("random", "random", (_message("random", 2),)))
    assert summary(SearchResults(query, groups, total=3)) == "3 messages in 2 channels"
    assert summary(SearchResults(query, groups[1:], total=1)) == "1 message in 1 channel"
    assert summary(SearchResults(query, groups, total=1000, capped=True)) == \
        "1000+ messages, the newest 3 in 2 channels"
    assert summary(SearchResults(Query("x"), documents=(object(),))) == "1 document"


# Workspace.search --------------------------------------------------------------------------------

def local_ms(day: int, hour: int = 12) -> int:
    """A time on a day of March 2026, on this computer's clock (filters are local days)."""
    return int(datetime(2026, 3, day, hour).astimezone().timestamp() * 1000)


class Team:
    """Ada's workspace with a clock the test sets, and other people's objects as sync would
    bring them."""

    def __init__(self, tmp_path: Path):
        self.clock = FakeClock(local_ms(1, 9) / 1000)
        self.ws = Workspace.init(Paths.resolve(tmp_path / "ada", "default"), "ada",
                                 clock=self.clock)

    def post(self, day: int, hour: int, channel: str, text: str) -> None:
        self.clock.set_ms(local_ms(day, hour))
        channels(self.ws, channel)
        self.ws.post(channel, text)

    def person(self, seed: str, nick: str) -> Identity:
        who = Identity.from_seed(seed.encode().ljust(32, b"."))
        self._add(build(who, "post/info", stream=kinds.profile_stream(who.public_key),
                        body={"name": nick}, ts=local_ms(1, 8)))
        return who

    def post_as(self, who: Identity, day: int, hour: int, channel: str, text: str) -> None:
        self._add(build(who, "post/text", stream=kinds.channel_stream(self.ws.id, channel),
                        body={"channel": channel, "text": text}, ts=local_ms(day, hour)))

    def _add(self, obj) -> None:
        assert self.ws.replica.ingest([obj])[0].status.value == "added"


@pytest.fixture
def team(tmp_path: Path):
    t = Team(tmp_path)
    bob = t.person("bob", "bob")
    t.post(2, 10, "general", "Lunch plans for Friday?")
    t.post_as(bob, 2, 11, "general", "plans: tacos")
    t.post(3, 10, "design", "new logo plans")
    t.post_as(bob, 4, 10, "random", "holiday plans")
    t.post(5, 10, "general", "plans are set")
    t.ws.topic("design", "planning the rebrand")
    t.clock.set_ms(local_ms(6))
    Documents(t.ws).new("Release plans")
    Documents(t.ws).new("Minutes")
    t.bob = bob
    yield t
    t.ws.close()


def _texts(results: SearchResults) -> list[tuple[str, list[str]]]:
    return [(g.channel, [m.text for m in g.messages]) for g in results.groups]


def test_messages_are_grouped_by_channel_newest_match_first(team) -> None:
    results = team.ws.search("plans")
    assert _texts(results) == [
        ("general", ["plans are set", "plans: tacos", "Lunch plans for Friday?"]),
        ("random", ["holiday plans"]),
        ("design", ["new logo plans"])]
    assert [m.text for m in results.messages][:2] == ["plans are set", "holiday plans"]
    assert (results.total, results.capped) == (5, False)
    # The last word is a prefix: "plan" finds the channel whose topic says "planning" too.
    assert [c.name for c in results.channels] == []
    assert [c.name for c in team.ws.search("plan").channels] == ["design"]
    assert [d.title for d in results.documents] == ["Release plans"]
    assert summary(results) == "5 messages in 3 channels · 1 document"


def test_the_limit_keeps_the_newest_and_the_count_stays_true(team) -> None:
    results = team.ws.search("plans", limit=2)
    assert _texts(results) == [("general", ["plans are set"]), ("random", ["holiday plans"])]
    assert results.total == 5
    assert summary(results) == "5 messages, the newest 2 in 2 channels · 1 document"


def test_filters_narrow_messages_channels_and_documents(team) -> None:
    assert _texts(team.ws.search("plans in:#general from:bob")) == [
        ("general", ["plans: tacos"])]
    only = team.ws.search("plan in:DESIGN")
    assert _texts(only) == [("design", ["new logo plans"])]
    assert [c.name for c in only.channels] == ["design"] and only.documents == ()
    # from: is about posts: no channels; documents by that person only.
    assert team.ws.search("plans from:bob").channels == ()
    assert team.ws.search("plans from:bob").documents == ()
    assert [d.title for d in team.ws.search("plans from:ada").documents] == ["Release plans"]
    # Filters alone.
    assert _texts(team.ws.search("from:@bob")) == [("random", ["holiday plans"]),
                                                    ("general", ["plans: tacos"])]


def test_before_and_after_leave_out_the_named_days(team) -> None:
    assert [m.text for m in team.ws.search("plans after:2026-03-02 before:2026-03-05")
            .messages] == ["holiday plans", "new logo plans"]
    assert [m.text for m in team.ws.search("before:2026-03-03").messages] == [
        "plans: tacos", "Lunch plans for Friday?"]
    assert [m.text for m in team.ws.search("after:2026-03-04").messages] == ["plans are set"]
    # Documents are dated too (both were made on the 6th).
    assert team.ws.search("plans before:2026-03-06").documents == ()


def test_a_person_or_channel_the_replica_cannot_tell_is_refused(team) -> None:
    team.person("mallory", "b\u043eb")  # "bob" with a Cyrillic о
    with pytest.raises(SearchError) as caught:
        team.ws.search("plans from:bob")
    message = str(caught.value)
    assert message.startswith("from: 'bob' could be 2 people:")
    assert team.bob.public_key.hex()[:8] in message and "b\u043eb" in message
    with pytest.raises(SearchError, match="^from: 'zed' is neither a key"):
        team.ws.search("from:zed")
    with pytest.raises(SearchError, match="^in: no channel #nowhere here$"):
        team.ws.search("plans in:#nowhere")
    # A key prefix tells them apart.
    assert _texts(team.ws.search(f"from:{team.bob.public_key.hex()[:10]} holiday")) == [
        ("random", ["holiday plans"])]


def test_hidden_and_deleted_messages_never_match(team) -> None:
    [tacos] = team.ws.search("tacos").messages
    # Ada (the root admin) denies Bob's posts in #random, and deletes one of her own.
    team.ws.add_policy("random", _deny(team.bob))
    assert team.ws.search("holiday").empty
    team.ws.conversation.delete(team.ws.search("set").messages[0].id)
    assert team.ws.search("set").empty
    assert team.ws.search("tacos").messages == (tacos,)


def _deny(who: Identity):
    from core.policy import Policy

    return Policy("deny", [who.public_key.hex()], ["post/text"], ["append"])


def test_search_workspace_takes_a_time_zone(team) -> None:
    results = search_workspace(team.ws, "after:2026-03-05", tz=UTC)
    assert all(m.ts >= int(datetime(2026, 3, 6, tzinfo=UTC).timestamp() * 1000)
               for m in results.messages)


# `hearth search` ---------------------------------------------------------------------------------

@pytest.fixture
def folder(team) -> Path:
    return team.ws.paths.data


def test_cli_prints_results_grouped_by_channel(hearth: Hearth, folder: Path) -> None:
    out = hearth("search", "plan", data=folder).stdout.splitlines()
    headers = [line for line in out if line.startswith("#")]
    assert headers == ["#general  (3)", "#random  (1)", "#design  (1)"]
    start = out.index("#general  (3)")
    assert [line.split(": ", 1)[1] for line in out[start + 1:start + 7:2]] == [
        "plans are set", "plans: tacos", "Lunch plans for Friday?"]
    assert out[start + 1].startswith("2026-03-05 10:00  ada (")
    assert out[start + 2].startswith("    id ")
    assert out[out.index("channels:") + 1] == "  #design  planning the rebrand"
    assert out[out.index("documents:") + 1].startswith("  Release plans  ")
    assert out[-1] == "5 messages in 3 channels · 1 matching channel · 1 document"


def test_cli_says_when_nothing_matches(hearth: Hearth, folder: Path) -> None:
    out = hearth("search", "zebra in:#general", data=folder).stdout.splitlines()
    assert out == ['No results for "zebra in:#general"', HINT]


def test_cli_refuses_a_bad_filter_with_one_line(hearth: Hearth, folder: Path) -> None:
    run = hearth("search", "plans after:2026-02-30", data=folder, ok=False)
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.strip() == "hearth: after: wants a date like 2026-03-01"
    assert hearth.fails("search", "from:nobody", data=folder) == (
        "hearth: from: 'nobody' is neither a key (64 hexadecimal characters) nor anyone's "
        "nickname here")
    assert hearth.fails("search", "in:#nowhere", data=folder) == \
        "hearth: in: no channel #nowhere here"


def test_cli_json_fields(hearth: Hearth, folder: Path) -> None:
    found = hearth("search", "plans", "--limit", "2", "--json", data=folder).json()
    assert set(found) == {"query", "total", "capped", "messages", "channels", "documents"}
    assert (found["query"], found["total"], found["capped"]) == ("plans", 5, False)
    assert [m["text"] for m in found["messages"]] == ["plans are set", "holiday plans"]
    assert set(found["messages"][0]) == {"id", "channel", "author", "nick", "ts", "text",
                                         "cursor", "edited", "reply_to", "replies", "reactions",
                                         "hidden", "attachments"}
    assert found["channels"] == []
    [document] = found["documents"]
    assert set(document) == {"id", "title", "creator", "ts"}
    assert document["title"] == "Release plans"


def test_plain_text_takes_markdown_markup_out_and_highlights_land_on_the_words() -> None:
    from app.search import highlights, parse_query, plain_text
    text = ("# Plan\n> **bold** *italic* _em_ `co*de*` [a link](https://x.example \"t\") "
            "![a cat](cat.png) ~~old~~ <https://y.example> \\*kept\\* snake_case 2*3*4")
    plain = plain_text(text)
    assert plain == ("Plan\nbold italic em co*de* a link a cat old https://y.example *kept* "
                     "snake_case 2*3*4")
    terms = parse_query("bold link cat").terms
    assert [plain[s:e] for s, e in highlights(plain, terms)] == ["bold", "link", "cat"]
    assert plain_text("```py\nprint(1)\n```") == "print(1)"
    assert plain_text("x__y__z and __strong__") == "x__y__z and strong"
