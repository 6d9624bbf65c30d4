#!/usr/bin/env bash
# Lists every Swift function, initializer, subscript and computed property with a body longer than the limit
# (the project rule: no function over 60 lines), as FILE:LINE: LENGTH lines  KIND NAME.
#
# A body's length is counted from the line of its keyword (`func`, `init`, `deinit`, `subscript`, `var`) to the line
# of its closing brace, both included. Braces are counted after comments and string literals (multi-line, raw,
# interpolated) are set aside, so a brace in a string or a comment does not count. Declarations without a body
# (protocol requirements) and stored properties are skipped; a nested function is listed on its own and also counts
# towards the function around it. Closures are not listed on their own: they count towards their function.
# Regex literals (/.../) are not recognised; Sources has none.
#
# usage: scripts/long-functions.sh [--max N] [PATH...]    (default: --max 60 and the repository's Sources)
# Exits 1 when something is listed, 0 when nothing is, 2 on a usage error.
set -euo pipefail

max=60
paths=()
while [[ $# -gt 0 ]]; do
    case $1 in
    --max)
        [[ $# -ge 2 && $2 =~ ^[0-9]+$ ]] || { echo "usage: scripts/long-functions.sh [--max N] [PATH...]" >&2; exit 2; }
        max=$2
        shift 2
        ;;
    -h | --help)
        sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *)
        paths+=("$1")
        shift
        ;;
    esac
done
if [[ ${#paths[@]} -eq 0 ]]; then
    cd "$(dirname "$0")/.."
    paths=(Sources)
fi

exec python3 - "$max" "${paths[@]}" <<'PYTHON'
import os
import re
import sys

limit = int(sys.argv[1])
roots = sys.argv[2:]

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
NUMBER = re.compile(r"[0-9A-Za-z_.]+")
RAW_STRING_START = re.compile(r"#+\"")
TYPE_KEYWORDS = {"struct", "class", "enum", "actor", "extension", "protocol"}
DECL_KEYWORDS = {"func", "init", "deinit", "subscript", "var"}
# Words that end a pending declaration that turned out to have no body.
STOPPERS = DECL_KEYWORDS | TYPE_KEYWORDS | {"let", "case", "typealias", "associatedtype", "in"}
# `for var x in`, `case var x`, `if var x = y`: a binding, not a property.
BINDERS = {"for", "case", "if", "guard", "while", ","}


def code_tokens(text):
    """Yields (kind, value, line) for the code of a Swift file: words, and the punctuation we need.

    Comments and string literals are skipped; the code inside a string interpolation is kept.
    """
    i, n, line = 0, len(text), 1
    # Each entry is the paren depth at which an interpolation returns to its string: (hashes, multiline, depth).
    strings = []
    parens = 0
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            yield ("newline", c, line - 1)
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            depth, i = 1, i + 2
            while i < n and depth:
                if text.startswith("/*", i):
                    depth, i = depth + 1, i + 2
                elif text.startswith("*/", i):
                    depth, i = depth - 1, i + 2
                else:
                    line += text[i] == "\n"
                    i += 1
        elif c == '"' or (c == "#" and RAW_STRING_START.match(text, i)):
            hashes = 0
            while text[i] == "#":
                hashes, i = hashes + 1, i + 1
            multiline = text.startswith('"""', i)
            i += 3 if multiline else 1
            i, line, interpolation = skip_string(text, i, line, hashes, multiline)
            if interpolation:
                strings.append((hashes, multiline, parens))
                parens += 1
        elif c == "(":
            parens += 1
            yield ("punct", c, line)
            i += 1
        elif c == ")":
            parens -= 1
            if strings and strings[-1][2] == parens:
                hashes, multiline, _ = strings.pop()
                i, line, interpolation = skip_string(text, i + 1, line, hashes, multiline)
                if interpolation:
                    strings.append((hashes, multiline, parens))
                    parens += 1
            else:
                yield ("punct", c, line)
                i += 1
        elif c == "`":
            j = text.find("`", i + 1)
            yield ("word", "`" + text[i + 1 : j] + "`", line)
            i = j + 1
        elif c.isalpha() or c == "_":
            m = IDENT.match(text, i)
            yield ("word", m.group(), line)
            i = m.end()
        elif c.isdigit():
            m = NUMBER.match(text, i)
            i = m.end()
        else:
            if c in "{}[];=.<>:":
                yield ("punct", c, line)
            i += 1


def skip_string(text, i, line, hashes, multiline):
    """Skips a string literal's contents from i; returns (index, line, True if stopped at an interpolation)."""
    close = ('"""' if multiline else '"') + "#" * hashes
    escape = "\\" + "#" * hashes
    n = len(text)
    while i < n:
        if text.startswith(escape, i):
            j = i + len(escape)
            if j < n and text[j] == "(":
                return j + 1, line, True
            if j < n and text[j] == "\n":
                line += 1
            i = j + 1
        elif text.startswith(close, i):
            return i + len(close), line, False
        else:
            line += text[i] == "\n"
            i += 1
    return i, line, False


def long_bodies(path):
    with open(path, encoding="utf-8") as f:
        tokens = list(code_tokens(f.read()))
    found = []
    stack = []  # one entry per open brace: None, ("type", name, keyword) or ("decl", keyword, name, line)
    pending = None  # a declaration whose body's brace has not come yet: (keyword, name, line)
    pending_type = None  # (name, keyword) of a type declaration whose brace has not come yet
    depth = 0  # parentheses and brackets opened since the pending declaration's keyword
    previous = None
    for index, (kind, value, line) in enumerate(tokens):
        if kind == "word":
            after_dot = previous == "."
            if value in STOPPERS and not after_dot and depth == 0:
                pending = None
            if value in DECL_KEYWORDS | {"let"}:
                pending_type = None  # `class func`, `class var`: a modifier, not a type
            if not after_dot and value in DECL_KEYWORDS and not (value == "var" and previous in BINDERS):
                pending, depth = (value, name_after(tokens, index, dotted=False), line), 0
            elif not after_dot and value in TYPE_KEYWORDS:
                pending_type = (name_after(tokens, index, dotted=True), value)
        elif kind == "newline":
            # A computed property's brace is on its line; `var x: Int` followed by a newline is stored.
            if pending is not None and pending[0] == "var" and depth == 0:
                pending = None
            continue
        elif value in "([":
            depth += 1
        elif value in ")]":
            depth -= 1
        elif value == "=" and pending is not None and pending[0] == "var" and depth == 0:
            pending = None
        elif value == ";" and depth == 0:
            pending = None
        elif value == "{":
            if pending is not None and depth == 0:
                stack.append(("decl",) + pending)
                pending = None
            elif pending_type is not None:
                stack.append(("type",) + pending_type)
                pending_type = None
            else:
                stack.append(None)
        elif value == "}":
            if depth == 0:
                pending = None
            entry = stack.pop() if stack else None
            if entry is not None and entry[0] == "decl":
                _, keyword, name, start = entry
                length = line - start + 1
                in_protocol = any(e is not None and e[0] == "type" and e[2] == "protocol" for e in stack)
                if length > limit and not in_protocol:
                    owner = ".".join(e[1] for e in stack if e is not None and e[0] == "type")
                    label = name if keyword in {"func", "var"} else keyword
                    found.append((start, length, keyword, owner + "." + label if owner else label))
        previous = value
    return found


def name_after(tokens, index, dotted):
    """The word after the keyword at index (`A.B` for an extension of a nested type when dotted)."""
    words = []
    i = index + 1
    while i < len(tokens) and tokens[i][0] == "word":
        words.append(tokens[i][1])
        if not (dotted and i + 2 < len(tokens) and tokens[i + 1][1] == "." and tokens[i + 2][0] == "word"):
            break
        i += 2
    return ".".join(words) if words else "(operator)"


files = []
for root in roots:
    if os.path.isfile(root):
        files.append(root)
    for directory, subdirectories, names in os.walk(root):
        subdirectories.sort()
        files += [os.path.join(directory, name) for name in sorted(names) if name.endswith(".swift")]

total = 0
for path in files:
    for start, length, keyword, name in sorted(long_bodies(path)):
        print(f"{path}:{start}: {length} lines  {keyword} {name}")
        total += 1
print(f"{total} bodies over {limit} lines in {len(files)} files", file=sys.stderr)
sys.exit(1 if total else 0)
PYTHON
