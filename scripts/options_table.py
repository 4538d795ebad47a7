"""Prints the README's "Options" table from the engine's option table (ringload/options.hpp),
so that the list users read is the one the CLI, Python and the vLLM/SGLang options take, with
which of them takes each row:

    PYTHONPATH=build/dev/bindings/python python3 scripts/options_table.py          # print it
    PYTHONPATH=build/dev/bindings/python python3 scripts/options_table.py --check README.md

--check fails (exit 1) when README.md's table differs from the engine's (tests/CMakeLists.txt
runs it), and --write README.md replaces it.
"""
import sys

from ringload import _ringload

BEGIN = "<!-- options table: scripts/options_table.py -->"
END = "<!-- end of options table -->"


FRONTS = {"cli": "CLI", "python": "Python", "server": "vLLM/SGLang"}


def table() -> str:
    lines = [BEGIN, "", "| Option | CLI flag | Taken by | Default | What it sets |", "|---|---|---|---|---|"]
    for row in _ringload.option_table():
        flag = row["cli_flag"]
        if row["kind"] == "choice":
            default = " / ".join(f"**{c}**" if c == row["default"] else c for c in row["choices"])
        elif row["kind"] == "flag" and row["default"] == "true":
            default, flag = "true", "--no-" + flag[2:]  # on unless turned off
        elif row["kind"] == "flag":
            default = row["default"] or "—"
        else:
            default = row["default"] or "—"
        fronts = ", ".join(FRONTS[front] for front in row["fronts"])
        flag = f"`{flag}`" if "cli" in row["fronts"] else "—"
        lines.append(f"| `{row['name']}` | {flag} | {fronts} | {default} | {row['help']} |")
    lines += ["", END]
    return "\n".join(lines)


def current(text: str) -> str:
    begin, end = text.find(BEGIN), text.find(END)
    return text[begin:end + len(END)] if begin >= 0 and end > begin else ""


def main(argv) -> int:
    if len(argv) == 3 and argv[1] in ("--check", "--write"):
        with open(argv[2]) as file:
            text = file.read()
        found = current(text)
        if argv[1] == "--write":
            with open(argv[2], "w") as file:
                file.write(text.replace(found, table()) if found else text)
            return 0
        if found != table():
            print(f"{argv[2]}: the options table differs from the engine's option table; run "
                  f"scripts/options_table.py --write {argv[2]}\n--- expected:\n{table()}\n--- found:\n{found}")
            return 1
        print(f"{argv[2]}: the options table matches the engine's ({len(_ringload.option_table())} options)")
        return 0
    print(table())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
