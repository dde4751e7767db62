"""``docs/cli.md``, the command-line reference, says what the parsers say: it is rendered from them by
``python -m syntax_nmt.cli_docs`` (option strings, value name, default, choices, help with ``%(default)s`` filled
in), and a changed option, help text or description without the page regenerated fails here."""

import argparse
import difflib
import os

from syntax_nmt import cli_docs

PAGE = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir, "docs", "cli.md")


def test_the_reference_page_is_the_parsers():
    with open(PAGE, encoding="utf-8") as f:
        page = f.read()
    rendered = cli_docs.render()
    diff = "\n".join(list(difflib.unified_diff(page.splitlines(), rendered.splitlines(), "docs/cli.md",
                                               "the parsers", lineterm=""))[:40])
    assert page == rendered, f"docs/cli.md differs from the parsers (python -m syntax_nmt.cli_docs > docs/cli.md):\n{diff}"
    for command, _ in cli_docs.COMMANDS:
        assert f"\n## `{command}`\n" in page


def _toy():
    p = argparse.ArgumentParser(prog="toy", description="  A toy.\n  Two lines.  ", epilog="\nexamples:\n  toy -o x\n")
    p.add_argument("--out", "-o", required=True, help="where | to write")
    p.add_argument("--rate", type=float, default=0.5, help="a rate (default %(default)s, %(prog)s)")
    p.add_argument("--mode", choices=["a", "b"], default="a")
    p.add_argument("--pair", nargs=2, metavar=("X", "Y"))
    p.add_argument("--names", nargs="*", default=["x", "y"], help="names")
    p.add_argument("--more", nargs="+", metavar="M", default=[])
    p.add_argument("--fast", action="store_true", help="go fast")
    p.add_argument("--hidden", help=argparse.SUPPRESS)
    p.add_argument("input", nargs="?", default="-", help="file")
    sub = p.add_subparsers(dest="cmd")
    one = sub.add_parser("one", help="do one thing")
    one.add_argument("--n", type=int, default=3)
    sub.add_parser("two")
    return p


def test_options_table_exact_rows():
    assert cli_docs.options_table(_toy()) == [
        "| option | value | default | what it does |", "|---|---|---|---|",
        "| `--out`, `-o` | `OUT` | required | where \\| to write |",
        "| `--rate` | `RATE` | `0.5` | a rate (default 0.5, toy) |",
        "| `--mode` | `{a,b}` | `a` |  |",
        "| `--pair` | `X Y` |  |  |",
        "| `--names` | `[NAMES ...]` | `x y` | names |",
        "| `--more` | `M [...]` |  |  |",
        "| `--fast` |  |  | go fast |",
        "| `input` (positional) | `[input]` | `-` | file |"]


def test_render_a_command_with_subcommands(monkeypatch):
    monkeypatch.setattr(cli_docs, "build", lambda spec: _toy())
    text = cli_docs.render([("toy", "x:y")])
    head, body = text.split("## `toy`\n\n")
    assert head.startswith("# Command-line reference\n\n") and "python -m syntax_nmt.cli_docs > docs/cli.md" in head
    assert body.split("\n") == [
        "A toy.\n  Two lines.".split("\n")[0], "  Two lines.", "",
        "```", "examples:", "  toy -o x", "```", "",
        *cli_docs.options_table(_toy()), "",
        "### `toy one`", "", "Do one thing.", "",
        "| option | value | default | what it does |", "|---|---|---|---|", "| `--n` | `N` | `3` |  |", "",
        "### `toy two`", "",
        "| option | value | default | what it does |", "|---|---|---|---|", ""]


def test_output_writes_the_page_and_an_unknown_option_is_an_error(tmp_path, capsys, monkeypatch):
    """Issue 56.7: ``python -m syntax_nmt.cli_docs -o x.md`` printed the page and left x.md as it was."""
    import pytest

    monkeypatch.setattr(cli_docs, "render", lambda: "# page\n")
    out = tmp_path / "x.md"
    out.write_text("old\n")
    cli_docs.main(["-o", str(out)])
    assert out.read_text() == "# page\n" and capsys.readouterr().out == ""
    cli_docs.main([])
    assert capsys.readouterr().out == "# page\n"
    with pytest.raises(SystemExit) as e:
        cli_docs.main(["--out", str(tmp_path / "y.md"), "--bogus"])
    assert e.value.code == 2 and not (tmp_path / "y.md").exists()


def test_the_recipes_and_benches_commands_have_a_section():
    """Issue 56.7: markers and the benches had none. (budget_curve and training_record build their parsers inside
    main(), in modules issue 61/62 changes: their sections are left to that change.)"""
    commands = [c for c, _ in cli_docs.COMMANDS]
    for name in ("syntax_nmt.recipes.markers", "syntax_nmt.bench)", "syntax_nmt.bench.length", "syntax_nmt.bench.parse",
                 "syntax_nmt.bench.gpu_targets", "syntax_nmt.cli_docs"):
        assert any(name in c for c in commands), name
