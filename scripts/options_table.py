"""Prints the README's "Options" table from the engine's option table (ringload/options.hpp),
so that the list users read is the one the CLI, Python and the vLLM/SGLang options take, with
which of them takes each row; and its "Write options" table from the write's rows
(write_option_table: `ringload convert`'s flags, Python's convert keywords):

    PYTHONPATH=build/dev/bindings/python python3 scripts/options_table.py          # print it
    PYTHONPATH=build/dev/bindings/python python3 scripts/options_table.py --check README.md

--check fails (exit 1) when a README.md table differs from the engine's (tests/CMakeLists.txt
runs it), and --write README.md replaces them.
"""
import sys

from ringload import _ringload

TABLES = {  # README markers -> the rows
    ("<!-- options table: scripts/options_table.py -->", "<!-- end of options table -->"): "option_table",
    ("<!-- write options table: scripts/options_table.py -->", "<!-- end of write options table -->"):
        "write_option_table",
}


FRONTS = {"cli": "CLI", "python": "Python", "server": "vLLM/SGLang"}


def table(begin: str, end: str, rows: list) -> str:
    lines = [begin, "", "| Option | CLI flag | Taken by | Default | What it sets |", "|---|---|---|---|---|"]
    for row in rows:
        flag = row["cli_flag"]
        if row["kind"] == "choice":
            default = " / ".join(f"**{c}**" if c == row["default"] else c for c in row["choices"])
        elif row["kind"] == "flag" and row["default"] == "true" and flag != "--" + row["name"].replace("_", "-"):
            default = "true"  # on unless said, with a flag of its own that takes true or false
        elif row["kind"] == "flag" and row["default"] == "true":
            default, flag = "true", "--no-" + flag[2:]  # on unless turned off
        else:
            default = row["default"] or "—"
        fronts = ", ".join(FRONTS[front] for front in row["fronts"])
        flag = f"`{flag}`" if "cli" in row["fronts"] else "—"
        if row["kind"] == "flag" and default == "true" and flag.startswith("`--") and not flag.startswith("`--no-"):
            flag += " true/false"
        lines.append(f"| `{row['name']}` | {flag} | {fronts} | {default} | {row['help']} |")
    lines += ["", end]
    return "\n".join(lines)


def current(text: str, begin: str, end: str) -> str:
    at, stop = text.find(begin), text.find(end)
    return text[at:stop + len(end)] if at >= 0 and stop > at else ""


def main(argv) -> int:
    wanted = {markers: table(*markers, getattr(_ringload, rows)()) for markers, rows in TABLES.items()}
    if len(argv) == 3 and argv[1] in ("--check", "--write"):
        with open(argv[2]) as file:
            text = file.read()
        if argv[1] == "--write":
            for markers, made in wanted.items():
                found = current(text, *markers)
                text = text.replace(found, made) if found else text
            with open(argv[2], "w") as file:
                file.write(text)
            return 0
        failed = 0
        for markers, made in wanted.items():
            found = current(text, *markers)
            if found != made:
                print(f"{argv[2]}: a table differs from the engine's rows; run scripts/options_table.py --write "
                      f"{argv[2]}\n--- expected:\n{made}\n--- found:\n{found}")
                failed = 1
        if not failed:
            print(f"{argv[2]}: the options tables match the engine's ({len(_ringload.option_table())} options, "
                  f"{len(_ringload.write_option_table())} write options)")
        return failed
    print("\n\n".join(wanted.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
