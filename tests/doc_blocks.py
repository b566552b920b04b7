#!/usr/bin/env python3
"""Runs every code block of the given Markdown documents, in order, as a reader would.

Each document gets a fresh working folder holding the repository's configs/, scripts/
and examples/ (linked, never written), with `actorpipe` from --bin first on PATH.
A block whose first line is `-- file: NAME`, `# file: NAME` or `// file: NAME` is saved
under NAME for the blocks after it, which must run it. By the block's info string:

  lua          a script: saved, or run with `actorpipe script`
  lua job      a Lua job: saved and planned with `actorpipe plan`
  lua plugin   a Lua plugin file: saved and loaded with `actorpipe plugins --plugin-path`
  sh           commands, run with bash (-e: the first that fails fails the block)
  toml         saved, or parsed
  cpp, meson   saved, for the `sh` blocks that build them
  python       saved, for the `sh` blocks that run them (python3 is $ACTORPIPE_PYTHON's
               when that is set: the Python with NumPy and PyTorch the tests use)
  text         output shown to the reader: not run

  doc_blocks.py --bin PREFIX/bin --source SOURCE_ROOT --work FOLDER DOC.md...
"""

import argparse
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

FILE_MARKER = re.compile(r"^(?:--|#|//) file: (\S+)\s*$")


def blocks(path):
    """(line, info, text) of every fenced block of the document."""
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("```"):
            info, start, body = lines[i][3:].strip(), i + 1, []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            if i == len(lines):
                raise SystemExit(f"{path}:{start}: the block is not closed")
            yield start, info, "\n".join(body) + "\n"
        i += 1


def prepare(work, source):
    """The working folder: configs/ a real folder (blocks save jobs in it) of links."""
    work.mkdir(parents=True)
    (work / "configs").mkdir()
    for entry in (source / "configs").iterdir():
        (work / "configs" / entry.name).symlink_to(entry)
    for name in ("scripts", "examples"):
        (work / name).symlink_to(source / name)


def run(command, work, env, where):
    print(f"==> {where}: {command if isinstance(command, str) else ' '.join(command)}", flush=True)
    shell = isinstance(command, str)
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", command] if shell else command, cwd=work, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(result.stdout, end="", flush=True)
    if result.returncode != 0:
        raise SystemExit(f"{where}: failed with exit status {result.returncode}")
    return result.stdout


def run_document(doc, source, work, env):
    prepare(work, source)
    saved = {}  # name → where it was written, until a later block runs it
    count = 0
    for line, info, text in blocks(doc):
        where = f"{doc}:{line}"
        kind = info.split()
        language = kind[0] if kind else ""
        if language == "text":
            continue
        count += 1
        marker = FILE_MARKER.match(text.splitlines()[0]) if text.strip() else None
        name = marker.group(1) if marker else None
        if name:
            target = work / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
            saved[name] = where
        if language == "sh":
            folder = lambda n: Path(n).parent.as_posix()
            for earlier in [n for n in saved if n in text or (folder(n) != "." and folder(n) in text.split())]:
                del saved[earlier]
            run(text, work, env, where)
        elif language == "lua" and kind[1:] == ["job"]:
            if not name:
                raise SystemExit(f"{where}: a Lua job block needs a '-- file:' first line")
            run(["actorpipe", "plan", name], work, env, where)
            saved.pop(name)
        elif language == "lua" and kind[1:] == ["plugin"]:
            if not name:
                raise SystemExit(f"{where}: a Lua plugin block needs a '-- file:' first line")
            run(["actorpipe", "plugins", "--plugin-path", name], work, env, where)
            saved.pop(name)
        elif language == "lua" and not kind[1:]:
            if not name:
                (work / "block.lua").write_text(text)
                run(["actorpipe", "script", "block.lua", "--output", f"runs/block-{line}"], work, env, where)
        elif language == "toml":
            try:
                tomllib.loads(text)
            except tomllib.TOMLDecodeError as e:
                raise SystemExit(f"{where}: not TOML: {e}")
        elif language in ("cpp", "meson", "python"):
            if not name:
                raise SystemExit(f"{where}: a {language} block needs a file: first line, for a later block to build")
        else:
            raise SystemExit(f"{where}: no way to run a '{info}' block (lua, lua job, lua plugin, sh, toml, cpp, "
                             "meson, python; text for output)")
    # A saved file that no later block used was never run. A file in a folder a block
    # builds (meson setup FOLDER) counts as used with it.
    unused = [f"{where} ({name})" for name, where in saved.items()]
    if unused:
        raise SystemExit(f"{doc}: saved but never run by a later block: {', '.join(unused)}")
    print(f"{doc}: {count} blocks ran", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", required=True, help="folder of the actorpipe program to run")
    parser.add_argument("--source", required=True, type=Path, help="the repository")
    parser.add_argument("--work", required=True, type=Path, help="a folder to work in (created)")
    parser.add_argument("docs", nargs="+", type=Path)
    args = parser.parse_args()
    path = [args.bin]
    if os.environ.get("ACTORPIPE_PYTHON"):
        path.append(os.path.dirname(os.environ["ACTORPIPE_PYTHON"]))
    env = dict(os.environ, PATH=os.pathsep.join(path + [os.environ.get("PATH", "")]))
    for doc in args.docs:
        run_document(doc.resolve(), args.source.resolve(), args.work / doc.stem, env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
