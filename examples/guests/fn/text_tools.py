"""Text tools: a function component in Python (world `test:text/text-tools` in wit/text.wit).

Not a toolhost plugin: it exports plain functions (`shout`, `read-file`) and an interface
(`text`) instead of `toolhost:tool/tool`, and toolhost makes a tool of each function, with an
input schema derived from the WIT parameter types. text.js implements the same WIT with the
same behaviour. Built with componentize-py (see ../build.sh).

Conventions of componentize-py: top-level exports are methods of a class `WitWorld`, an
exported interface is a class named after it (`Text`); a function returning `result<T, E>`
returns T and raises `Err(E)`; records are dataclasses and enums are `Enum`s from
`wit_world.exports.text`.
"""

import wit_world
from componentize_py_types import Err
from wit_world import exports
from wit_world.exports.text import LetterCase, Stats, StatsOptions, WordCount

DEFAULT_TOP = 3


def _is_word_char(c):
    """A letter with distinct upper and lower case forms, an ASCII digit, ' or - (the same rule
    as `isWordChar` in text.js, which has no Unicode categories to go by)."""
    return "0" <= c <= "9" or c in "'-" or c.lower() != c.upper()


def _words(text):
    """(start, end) of every maximal run of word characters."""
    spans, start = [], None
    for i, c in enumerate(text):
        if _is_word_char(c):
            if start is None:
                start = i
        elif start is not None:
            spans.append((start, i))
            start = None
    if start is not None:
        spans.append((start, len(text)))
    return spans


class WitWorld(wit_world.WitWorld):
    def shout(self, s: str) -> str:
        return s.upper() + "!"

    def read_file(self, path: str) -> str:
        try:
            with open(path, encoding="utf-8") as f:
                return f.read()
        except FileNotFoundError:
            raise Err(f"{path}: not found")
        except IsADirectoryError:
            raise Err(f"{path}: is a directory")
        except PermissionError:
            raise Err(f"{path}: not allowed")
        except OSError as e:
            raise Err(f"{path}: {e.strerror or e}")
        except UnicodeDecodeError:
            raise Err(f"{path}: not UTF-8 text")


class Text(exports.Text):
    def word_stats(self, text: str, opts: StatsOptions | None) -> Stats:
        ignore_case = opts.ignore_case if opts else False
        top = opts.top if opts and opts.top is not None else DEFAULT_TOP
        words = [text[a:b] for a, b in _words(text)]
        if not words:
            raise Err("no words")
        counts = {}  # insertion order = order of first appearance
        for w in words:
            key = w.lower() if ignore_case else w
            counts[key] = counts.get(key, 0) + 1
        # sorted() is stable: ties keep their order of first appearance.
        ranked = sorted(counts.items(), key=lambda kv: -kv[1])[:top]
        longest = words[0]
        for w in words[1:]:
            if len(w) > len(longest):
                longest = w
        lines = text.count("\n") + (1 if text and not text.endswith("\n") else 0)
        return Stats(
            words=len(words),
            lines=lines,
            chars=len(text),
            top=[WordCount(word=w, count=n) for w, n in ranked],
            longest=longest,
        )

    def convert_case(self, text: str, to: LetterCase) -> str:
        if to == LetterCase.UPPER:
            return text.upper()
        if to == LetterCase.LOWER:
            return text.lower()
        out, last = [], 0
        for a, b in _words(text):
            w = text[a:b]
            out.append(text[last:a])
            out.append(w[0].upper() + w[1:].lower())
            last = b
        out.append(text[last:])
        return "".join(out)
