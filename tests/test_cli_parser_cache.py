"""``main`` builds its parser once per process: the reused parser must parse, help and
refuse exactly as a fresh one, and follow what is registered after it was built."""

from __future__ import annotations

import argparse

import pytest

import dlsched.cli as cli
from dlsched.problems import rates


def _helps(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(command path, help text) of ``parser`` and of every parser below it."""
    yield path, parser.format_help()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _helps(sub, (*path, name))


def test_the_reused_parser_is_the_fresh_one():
    first = cli._parser()
    assert cli._parser() is first
    assert dict(_helps(first)) == dict(_helps(cli.build_parser()))


def test_a_command_cannot_change_the_defaults_of_the_next_call(monkeypatch):
    seen = []

    def record(args):
        seen.append(list(args.option))
        args.option.append("changed=1")  # a command changing what it was given
        return 0

    monkeypatch.setattr(cli, "_cmd_solve", record)
    monkeypatch.setattr(cli, "_cached", None)  # one parser, built with the patched handler
    assert cli.main(["solve", "x.json"]) == 0
    assert cli.main(["solve", "x.json", "--option", "a=1"]) == 0
    assert cli.main(["solve", "x.json"]) == 0
    assert seen == [[], ["a=1"], []]


def test_a_model_registered_later_is_a_choice(monkeypatch, capsys):
    monkeypatch.setattr(rates, "_LOCALITY", dict(rates._LOCALITY))
    before = cli._parser()
    with pytest.raises(SystemExit) as stop:
        cli.main(["simulate", "w.json", "--policy", "fifo", "--locality", "sd-later"])
    assert stop.value.code == 2
    assert "invalid choice: 'sd-later'" in capsys.readouterr().err

    rates.register_locality("sd-later", rates._LOCALITY["gavel"])
    after = cli._parser()
    assert after is not before
    assert dict(_helps(after)) == dict(_helps(cli.build_parser()))
    simulate = next(a for a in after._actions if isinstance(a, argparse._SubParsersAction))
    locality = next(a for a in simulate.choices["simulate"]._actions
                    if "--locality" in a.option_strings)
    assert "sd-later" in locality.choices
