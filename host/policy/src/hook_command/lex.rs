//! A hook command cut into words and operators as `sh` cuts it, with the expansions toolhost
//! can know done, and a typed refusal for the ones it cannot.
//!
//! The cutting (where words end, where operators stand) is ours, since `shlex` does not split
//! operators glued to words (`a;b`) and loses which quotes a `$` stood in. Each word is then
//! unquoted by `shlex`, after the known variables were put back into its raw text quoted for
//! the context they stood in.

use super::Reason;
use std::path::Path;

/// What the command's known variables stand for.
pub(super) struct Expansions<'a> {
    /// `$CLAUDE_PROJECT_DIR`, `$TOOLHOST_WORKSPACE` (and the hook's working directory).
    pub workspace: &'a Path,
    /// `~`, `$HOME`; `None` when it is not known (then they cannot be analysed).
    pub home: Option<&'a Path>,
}

/// One word, unquoted and expanded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Word {
    /// The word as the program sees it.
    pub text: String,
    /// Written with no quote, backslash or expansion at all: only such a word can be a
    /// reserved word (`if`, `{`) or an assignment's name.
    pub bare: bool,
    /// `NAME=…` with a bare name: an assignment when it comes before the program.
    pub assignment: bool,
}

/// A redirection's operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Redirect {
    /// `<`, `<>`: the command reads the file.
    Input,
    /// `>`, `>>`, `>|`, `&>`, `&>>`: the command writes the file.
    Output,
    /// `>&`, `<&`: the target is a descriptor (`2>&1`, `>&2`), or in bash a file written.
    Duplicate,
}

/// A token of a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Token {
    Word(Word),
    /// Ends a simple command: `;`, `&`, `&&`, `||`, a newline.
    Separator,
    /// `|`, `|&`: ends a simple command and feeds the next one's stdin.
    Pipe,
    /// A redirection; its target is the next word.
    Redirect(Redirect),
}

/// Cut `command` into tokens.
///
/// # Errors
///
/// The first construct whose meaning depends on something toolhost cannot see: command
/// substitution, a subshell, a variable other than the known ones, a here-document, an
/// unquoted expansion that the shell would split, a quote left open.
pub(super) fn tokens(command: &str, ex: &Expansions<'_>) -> Result<Vec<Token>, Reason> {
    let mut lexer = Lexer { chars: command.chars().collect(), at: 0, ex };
    let mut out = Vec::new();
    loop {
        lexer.skip_blanks();
        let Some(c) = lexer.peek(0) else { break };
        match c {
            '\n' | ';' => {
                lexer.at += 1;
                out.push(Token::Separator);
            }
            '&' if lexer.peek(1) == Some('>') => {
                lexer.at += if lexer.peek(2) == Some('>') { 3 } else { 2 };
                out.push(Token::Redirect(Redirect::Output));
            }
            '&' => {
                lexer.at += if lexer.peek(1) == Some('&') { 2 } else { 1 };
                out.push(Token::Separator);
            }
            '|' if lexer.peek(1) == Some('|') => {
                lexer.at += 2;
                out.push(Token::Separator);
            }
            '|' => {
                lexer.at += if lexer.peek(1) == Some('&') { 2 } else { 1 };
                out.push(Token::Pipe);
            }
            '(' | ')' => {
                return Err(Reason::Subshell);
            }
            '<' | '>' => out.push(Token::Redirect(lexer.redirect()?)),
            '#' => lexer.skip_comment(),
            _ => {
                let (raw, bare, digits) = lexer.raw_word()?;
                // `2>&1`: a number glued to a redirection is its descriptor, not a word.
                if digits && matches!(lexer.peek(0), Some('<' | '>')) {
                    continue;
                }
                out.push(Token::Word(unquote(&raw, bare)?));
            }
        }
    }
    Ok(out)
}

struct Lexer<'a> {
    chars: Vec<char>,
    at: usize,
    ex: &'a Expansions<'a>,
}

/// Characters that end an unquoted word.
fn ends_word(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | ';' | '&' | '|' | '(' | ')' | '<' | '>')
}

impl Lexer<'_> {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.at + ahead).copied()
    }

    fn skip_blanks(&mut self) {
        loop {
            match (self.peek(0), self.peek(1)) {
                (Some(' ' | '\t'), _) => self.at += 1,
                // A line continuation.
                (Some('\\'), Some('\n')) => self.at += 2,
                _ => return,
            }
        }
    }

    fn skip_comment(&mut self) {
        while self.peek(0).is_some_and(|c| c != '\n') {
            self.at += 1;
        }
    }

    /// A redirection operator at `self.at` (`<` or `>` first).
    fn redirect(&mut self) -> Result<Redirect, Reason> {
        let first = self.chars[self.at];
        self.at += 1;
        let second = self.peek(0);
        let kind = match (first, second) {
            ('<', Some('<')) => return Err(Reason::HereDocument),
            ('<', Some('>')) => {
                self.at += 1;
                Redirect::Input
            }
            ('<' | '>', Some('&')) => {
                self.at += 1;
                Redirect::Duplicate
            }
            ('<', _) => Redirect::Input,
            ('>', Some('>' | '|')) => {
                self.at += 1;
                Redirect::Output
            }
            _ => Redirect::Output,
        };
        // `<(…)`, `>(…)`: process substitution.
        if self.peek(0) == Some('(') {
            return Err(Reason::CommandSubstitution("<(…)"));
        }
        Ok(kind)
    }

    /// The raw text of the word at `self.at`, with known variables replaced by their values
    /// quoted for where they stood; whether it was bare; whether it is all digits.
    fn raw_word(&mut self) -> Result<(String, bool, bool), Reason> {
        let start = self.at;
        let mut raw = String::new();
        let mut bare = true;
        while let Some(c) = self.peek(0) {
            if ends_word(c) {
                break;
            }
            match c {
                '\'' => {
                    bare = false;
                    let end = self.find_from(self.at + 1, '\'').ok_or(Reason::Unterminated)?;
                    raw.extend(&self.chars[self.at..=end]);
                    self.at = end + 1;
                }
                '"' => {
                    bare = false;
                    self.double_quoted(&mut raw)?;
                }
                '\\' => {
                    bare = false;
                    match self.peek(1) {
                        Some('\n') => {}
                        Some(next) => {
                            raw.push('\\');
                            raw.push(next);
                        }
                        None => return Err(Reason::Unterminated),
                    }
                    self.at += 2;
                }
                '$' => {
                    bare = false;
                    self.dollar(&mut raw, false)?;
                }
                '`' => return Err(Reason::CommandSubstitution("`…`")),
                '~' if self.at == start => {
                    bare = false;
                    self.tilde(&mut raw)?;
                }
                '*' | '?' => return Err(Reason::Pattern(self.rest_of_word())),
                '[' if self.chars[self.at + 1..].iter().take_while(|c| !ends_word(**c)).any(|c| *c == ']') => {
                    return Err(Reason::Pattern(self.rest_of_word()));
                }
                _ => {
                    raw.push(c);
                    self.at += 1;
                }
            }
        }
        let digits = bare && !raw.is_empty() && raw.bytes().all(|b| b.is_ascii_digit());
        Ok((raw, bare, digits))
    }

    /// The text of the word being read, for a message.
    fn rest_of_word(&self) -> String {
        let mut start = self.at;
        while start > 0 && !ends_word(self.chars[start - 1]) {
            start -= 1;
        }
        self.chars[start..].iter().take_while(|c| !ends_word(**c)).collect()
    }

    fn find_from(&self, from: usize, c: char) -> Option<usize> {
        self.chars.get(from..)?.iter().position(|x| *x == c).map(|i| from + i)
    }

    /// `"…"` at `self.at`, onto `raw` (still double-quoted, for `shlex`).
    fn double_quoted(&mut self, raw: &mut String) -> Result<(), Reason> {
        raw.push('"');
        self.at += 1;
        loop {
            match self.peek(0) {
                None => return Err(Reason::Unterminated),
                Some('"') => {
                    raw.push('"');
                    self.at += 1;
                    return Ok(());
                }
                Some('\\') => {
                    let next = self.peek(1).ok_or(Reason::Unterminated)?;
                    raw.push('\\');
                    raw.push(next);
                    self.at += 2;
                }
                Some('$') => self.dollar(raw, true)?,
                Some('`') => return Err(Reason::CommandSubstitution("`…`")),
                Some(c) => {
                    raw.push(c);
                    self.at += 1;
                }
            }
        }
    }

    /// `$…` at `self.at`: a known variable's value onto `raw`, a literal `$`, or the reason the
    /// expansion cannot be known.
    fn dollar(&mut self, raw: &mut String, quoted: bool) -> Result<(), Reason> {
        let name: String = match self.peek(1) {
            Some('(') => return Err(Reason::CommandSubstitution("$(…)")),
            Some('{') => {
                let end = self.find_from(self.at + 2, '}').ok_or(Reason::Unterminated)?;
                let name: String = self.chars[self.at + 2..end].iter().collect();
                self.at = end + 1;
                if !is_name(&name) {
                    return Err(Reason::Variable(format!("${{{name}}}")));
                }
                name
            }
            Some(c) if c == '_' || c.is_ascii_alphabetic() => {
                let len =
                    self.chars[self.at + 1..].iter().take_while(|c| **c == '_' || c.is_ascii_alphanumeric()).count();
                let name = self.chars[self.at + 1..self.at + 1 + len].iter().collect();
                self.at += 1 + len;
                name
            }
            // Numbers only (the exit status, a process id, the argument count): they name no
            // file a tool could write.
            Some('?' | '$' | '#' | '!') => {
                self.at += 2;
                raw.push('0');
                return Ok(());
            }
            Some('\'' | '"') if !quoted => return Err(Reason::Variable(format!("${}…", self.chars[self.at + 1]))),
            Some(c) if !c.is_whitespace() && (!quoted || c != '"') && c != '/' && c != ':' => {
                return Err(Reason::Variable(format!("${c}")));
            }
            // A `$` before nothing a shell expands is itself.
            _ => {
                self.at += 1;
                raw.push_str("\\$");
                return Ok(());
            }
        };
        let value = match name.as_str() {
            "CLAUDE_PROJECT_DIR" | "TOOLHOST_WORKSPACE" => self.ex.workspace,
            "HOME" => self.ex.home.ok_or(Reason::NoHome)?,
            _ => return Err(Reason::Variable(format!("${name}"))),
        };
        let value = value.to_str().ok_or(Reason::NotUtf8)?;
        push_value(raw, &name, value, quoted)
    }

    /// `~` at the start of a word.
    fn tilde(&mut self, raw: &mut String) -> Result<(), Reason> {
        match self.peek(1) {
            None | Some('/') => {}
            Some(c) if ends_word(c) => {}
            Some(_) => return Err(Reason::Variable(format!("~{}", self.rest_of_word().trim_start_matches('~')))),
        }
        self.at += 1;
        let home = self.ex.home.ok_or(Reason::NoHome)?;
        push_value(raw, "~", home.to_str().ok_or(Reason::NotUtf8)?, false)
    }
}

/// `value` onto `raw` so that `shlex` gives it back as it is.
fn push_value(raw: &mut String, name: &str, value: &str, quoted: bool) -> Result<(), Reason> {
    if quoted {
        for c in value.chars() {
            if matches!(c, '\\' | '"' | '$' | '`') {
                raw.push('\\');
            }
            raw.push(c);
        }
        return Ok(());
    }
    // Unquoted, the shell splits the value at blanks and expands patterns in it: then it
    // names other files than the value says.
    if value.chars().any(|c| c.is_whitespace() || matches!(c, '*' | '?' | '[')) {
        return Err(Reason::Split { name: name.to_string(), value: value.to_string() });
    }
    raw.push_str(&shlex::try_quote(value).map_err(|_| Reason::NotUtf8)?);
    Ok(())
}

fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}

/// `raw` unquoted by `shlex` (one word: its blanks are all quoted).
fn unquote(raw: &str, bare: bool) -> Result<Word, Reason> {
    let mut words = shlex::split(raw).ok_or(Reason::Unterminated)?;
    let text = match words.len() {
        // `shlex` reads a leading `#` as a comment; ours never is one here.
        0 => String::new(),
        1 => words.pop().unwrap_or_default(),
        _ => return Err(Reason::Unterminated),
    };
    let assignment = raw.split_once('=').is_some_and(|(name, _)| is_name(name));
    Ok(Word { text, bare, assignment })
}
