"""Compare pagemind's ReadAgent prompts with the official notebook, character for character.

Usage: python scripts/check_prompts_against_notebook.py path/to/read_agent_demo.ipynb [--update]

The notebook is ``assets/read_agent_demo.ipynb`` of github.com/read-agent/read-agent.github.io; it is not
shipped with pagemind. ``tests/data/published_prompts.json`` says which notebook cell and template variable
each of our prompts comes from, and keeps the SHA-256 of the published text (placeholders renamed as the
prompt's ``placeholders`` say), which ``tests/test_prompt_fidelity.py`` checks without the notebook.
For every such prompt this script prints whether our text (``Prompt.published_form()``) equals the
published one and, if not, a line diff with whitespace made visible; it exits 1 when a prompt marked
verbatim differs, a placeholder is not mapped or a stored hash is stale. ``--update`` rewrites the stored
hashes from the notebook.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import hashlib
import json
import re
import string
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "published_prompts.json"


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def notebook_templates(notebook: dict) -> dict[str, dict[str, str]]:
    """Each titled code cell's string assignments: {cell title: {variable: string}}."""
    cells: dict[str, dict[str, str]] = {}
    for cell in notebook["cells"]:
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        title = re.match(r"\s*#\s*@title\s+(.+)", source)
        if cell["cell_type"] != "code" or not title:
            continue
        try:
            tree = ast.parse(source)
        except SyntaxError:  # shell lines (!pip ...) in set-up cells
            continue
        cells[title.group(1).strip()] = {
            target.id: node.value.value
            for node in tree.body if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
            for target in node.targets if isinstance(target, ast.Name)
        }
    return cells


def rename(template: str, placeholders: dict[str, str]) -> tuple[str, list[str]]:
    """The ``str.format`` template with each ``{name}`` written as ``{{ our_name }}``: (text, unmapped names)."""
    out, unmapped = [], []
    for literal, name, spec, conversion in string.Formatter().parse(template):
        out.append(literal)
        if name is None:
            continue
        if spec or conversion or name not in placeholders:
            unmapped.append(name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else ""))
            out.append("{" + name + "}")
        else:
            out.append("{{ " + placeholders[name] + " }}")
    return "".join(out), unmapped


def visible_diff(published: str, ours: str) -> list[str]:
    """A unified diff of the two texts, each line shown with repr() so whitespace differences show."""
    a = [repr(line) for line in published.splitlines(keepends=True)]
    b = [repr(line) for line in ours.splitlines(keepends=True)]
    return list(difflib.unified_diff(a, b, "notebook", "pagemind", lineterm="", n=1))


def check(notebook_path: Path, data_path: Path = DATA, update: bool = False) -> int:
    from pagemind.prompts import get_prompt

    cells = notebook_templates(json.loads(notebook_path.read_text(encoding="utf-8")))
    data = json.loads(data_path.read_text(encoding="utf-8"))
    failures = 0
    used: set[tuple[str, str]] = set()
    for group, entries in data["prompts"].items():
        for name, entry in entries.items():
            if entry["origin"] != "notebook":
                continue
            prompt = get_prompt(group, name)
            label = f"{group}.yaml {name} ({'verbatim' if prompt.verbatim else 'not verbatim'})"
            published = cells.get(entry["cell"], {}).get(entry["name"])
            if published is None:
                print(f"MISSING  {label}: no {entry['name']} in cell {entry['cell']!r}")
                failures += 1
                continue
            used.add((entry["cell"], entry["name"]))
            renamed, unmapped = rename(published, dict(prompt.placeholders))
            problems = [f"unmapped placeholders {unmapped}"] if unmapped else []
            if sha256(renamed) != entry["sha256"]:
                if update:
                    entry["sha256"] = sha256(renamed)
                else:
                    problems.append("stored sha256 is stale (run with --update)")
            same = renamed == prompt.published_form()
            if same != prompt.verbatim:
                problems.append("equal to the notebook but not marked verbatim" if same
                                else "marked verbatim but differs from the notebook")
            print(f"{'OK' if not problems else 'FAIL':8} {label}: {'identical' if same else 'differs'}"
                  + (f"; {'; '.join(problems)}" if problems else ""))
            if not same:
                for line in visible_diff(renamed, prompt.published_form()):
                    print("    " + line)
                if prompt.differences:
                    print(f"    stated differences: {prompt.differences}")
            failures += bool(problems)
    for title, templates in cells.items():
        for variable in templates:
            if variable.endswith("_template") and (title, variable) not in used:
                print(f"UNUSED   notebook cell {title!r}: {variable}")
    if update:
        data_path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook", type=Path, help="a local copy of read_agent_demo.ipynb")
    parser.add_argument("--update", action="store_true", help="rewrite the stored hashes from the notebook")
    parser.add_argument("--data", type=Path, default=DATA, help="the published-prompts record to check")
    args = parser.parse_args(argv)
    return check(args.notebook, args.data, args.update)


if __name__ == "__main__":
    sys.exit(main())
