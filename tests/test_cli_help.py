"""Every command-line option has help text that states its default; show-versions."""

from __future__ import annotations

import argparse

from dlsched.cli import build_parser, main
from dlsched.cli_support import DefaultsFormatter, has_default


def _options(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _options(sub, (*path, name))
        elif not isinstance(action, argparse._HelpAction):
            yield path, action, parser


def test_every_option_has_help_with_its_default():
    missing = []
    for path, action, parser in _options(build_parser()):
        formatter = parser.formatter_class(prog="dlsched")
        assert isinstance(formatter, DefaultsFormatter), " ".join(path)
        text = formatter._get_help_string(action)
        if not (action.help or "").strip():
            missing.append(f"{' '.join(path)} {action.option_strings or action.dest}: no help")
        elif has_default(action) and "default" not in text:
            missing.append(f"{' '.join(path)} {action.option_strings}: no default in {text!r}")
    assert not missing, "\n".join(missing)


def test_defaults_are_written_into_the_help(capsys):
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    text = " ".join(sub.choices["solve"].format_help().split())
    assert "seconds (default 60)" in text  # "(60)" became "(default 60)"
    text = " ".join(sub.choices["import-trace"].format_help().split())
    assert "(default 0.8)" in text and "(default sched2" in text


def test_show_versions(capsys):
    assert main(["show-versions"]) == 0
    out = capsys.readouterr().out
    for word in ("dlsched", "python", "platform", "pulp", "highspy", "ortools"):
        assert word in out
