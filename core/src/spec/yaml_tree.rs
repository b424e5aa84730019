//! A YAML document as a tree of nodes that know their line, for the structural checks of exectl.yaml and
//! the --images file (duplicate keys, empty values, unknown keys): serde_norway locates none of those
//! right (it takes the last duplicate, or reports line 1). Values are still read by serde_norway; the events
//! come from yaml-rust2's parser (safe Rust, unlike libyaml's).

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// `plain`: written without quotes and without a tag (only such a scalar can mean null).
    Scalar {
        text: String,
        plain: bool,
    },
    Map(Vec<(Node, Node)>),
    Seq(Vec<Node>),
    Alias,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    pub kind: Kind,
    /// 1-based.
    pub line: usize,
}

impl Node {
    pub fn is_null(&self) -> bool {
        matches!(&self.kind, Kind::Scalar { text, plain: true }
            if ["", "~", "null", "Null", "NULL"].contains(&text.as_str()))
    }

    pub fn text(&self) -> Option<&str> {
        match &self.kind {
            Kind::Scalar { text, .. } => Some(text),
            _ => None,
        }
    }

    /// What the node is, for "expected a single value, found ...".
    pub fn describe(&self) -> &'static str {
        match self.kind {
            Kind::Scalar { .. } if self.is_null() => "nothing",
            Kind::Scalar { .. } => "a value",
            Kind::Map(_) => "a mapping",
            Kind::Seq(_) => "a list",
            Kind::Alias => "an alias",
        }
    }
}

enum Event {
    Scalar(String, bool),
    MapStart,
    MapEnd,
    SeqStart,
    SeqEnd,
    Alias,
    Other,
    End,
}

/// A user's YAML without the UTF-8 byte-order mark some editors begin a file with: YAML allows it,
/// yet serde_norway reads it as part of the first key (`name` became "\u{feff}name": "missing field
/// `name`"). Every parse of a user's file (exectl.yaml, images, sweep, campaign) begins here.
pub fn without_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// The first document's root node; None for a syntax error (serde_norway reports those with their line) or
/// an empty document.
pub fn parse(text: &str) -> Option<Node> {
    let events = events(text)?;
    let mut it = events.into_iter().peekable();
    // Skip stream and document starts.
    while matches!(it.peek(), Some((Event::Other, _))) {
        it.next();
    }
    let node = build(&mut it)?;
    Some(node)
}

fn build(it: &mut std::iter::Peekable<std::vec::IntoIter<(Event, usize)>>) -> Option<Node> {
    let (event, line) = it.next()?;
    let kind = match event {
        Event::Scalar(text, plain) => Kind::Scalar { text, plain },
        Event::Alias => Kind::Alias,
        Event::MapStart => {
            let mut pairs = Vec::new();
            loop {
                if matches!(it.peek(), Some((Event::MapEnd, _))) {
                    it.next();
                    break;
                }
                let k = build(it)?;
                let v = build(it)?;
                pairs.push((k, v));
            }
            Kind::Map(pairs)
        }
        Event::SeqStart => {
            let mut items = Vec::new();
            loop {
                if matches!(it.peek(), Some((Event::SeqEnd, _))) {
                    it.next();
                    break;
                }
                items.push(build(it)?);
            }
            Kind::Seq(items)
        }
        Event::MapEnd | Event::SeqEnd | Event::Other | Event::End => return None,
    };
    Some(Node { kind, line })
}

/// The parser's events with their 1-based lines, up to the end of the first document (a fault in a later
/// document is not this tree's concern); None at a syntax error. A node's line is where libyaml put it
/// (the reports and their tests were written against libyaml): at its anchor or tag if it has one, else at
/// its first character, and an empty value at the `:`, `-` or `?` before it.
fn events(text: &str) -> Option<Vec<(Event, usize)>> {
    // yaml-rust2 would make a byte-order mark part of the first key.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    events_of(text).or_else(|| events_of(&tabs_after_colons_as_spaces(text)?))
}

fn events_of(text: &str) -> Option<Vec<(Event, usize)>> {
    use yaml_rust2::parser::{Event as Y, Parser};
    use yaml_rust2::scanner::TScalarStyle;
    let lines: Vec<&str> = text.split('\n').collect();
    let mut parser = Parser::new_from_str(text);
    let mut out = Vec::new();
    loop {
        let (event, mark) = parser.next_token().ok()?;
        // yaml-rust2 0.13's Marker::line is already 1-based (0.8 and older counted from 0); col is 0-based.
        let (line, col) = (mark.line(), mark.col());
        // The start of a collection with an anchor or tag: a flow one is marked at its `[`/`{` (the
        // properties are before it), a block one at or just past its first entry (the properties are on
        // an earlier line).
        let collection = |props: bool| {
            if !props {
                return line;
            }
            let at = line
                .checked_sub(1)
                .and_then(|i| lines.get(i))
                .and_then(|l| l.chars().nth(col));
            let flow = matches!(at, Some('[' | '{'));
            line_of_previous_token(&lines, line, if flow { col } else { 0 })
        };
        let ev = match event {
            Y::Scalar(value, style, anchor, tag) => {
                // An empty value is marked at the next token, a block scalar at its first content line,
                // a scalar with properties after them: each belongs to the line of the token before.
                let earlier = (value.is_empty() && style == TScalarStyle::Plain)
                    || matches!(style, TScalarStyle::Literal | TScalarStyle::Folded)
                    || anchor != 0
                    || tag.is_some();
                let line = if earlier {
                    line_of_previous_token(&lines, line, col)
                } else {
                    line
                };
                let plain = style == TScalarStyle::Plain && tag.is_none();
                out.push((Event::Scalar(value, plain), line));
                continue;
            }
            Y::MappingStart(anchor, tag) => {
                out.push((Event::MapStart, collection(anchor != 0 || tag.is_some())));
                continue;
            }
            Y::SequenceStart(anchor, tag) => {
                out.push((Event::SeqStart, collection(anchor != 0 || tag.is_some())));
                continue;
            }
            Y::MappingEnd => Event::MapEnd,
            Y::SequenceEnd => Event::SeqEnd,
            Y::Alias(_) => Event::Alias,
            Y::DocumentEnd | Y::StreamEnd => Event::End,
            Y::Nothing | Y::StreamStart | Y::DocumentStart => Event::Other,
        };
        let end = matches!(ev, Event::End);
        out.push((ev, line));
        if end {
            return Some(out);
        }
    }
}

/// `text` with spaces for the tabs right after a `:` (same lines and columns), or None if it has none:
/// libyaml takes `key:<TAB>value`, yaml-rust2 refuses it. Tried only when yaml-rust2 refused the text,
/// so that a tab inside a quoted key of a file it reads stays as written.
fn tabs_after_colons_as_spaces(text: &str) -> Option<String> {
    if !text.contains(":\t") {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    let mut after_colon = false;
    for c in text.chars() {
        after_colon = match c {
            '\t' if after_colon => {
                out.push(' ');
                continue;
            }
            ':' => true,
            _ => false,
        };
        out.push(c);
    }
    Some(out)
}

/// The 1-based line of the last token before the mark (`line`, 0-based character `col`): between two
/// tokens there are only blanks, line breaks and comments, so it is the nearest line (or the part of
/// `line` before `col`) holding something else. yaml-rust2 marks an empty item after the `-` that starts
/// the next item, so a lone `-` before `col` is that next token, not the previous one.
fn line_of_previous_token(lines: &[&str], line: usize, col: usize) -> usize {
    let significant = |s: &str| {
        let s = s.trim_start();
        !s.is_empty() && !s.starts_with('#')
    };
    let before: String = line
        .checked_sub(1)
        .and_then(|i| lines.get(i))
        .map(|l| l.chars().take(col).collect())
        .unwrap_or_default();
    let before = before.trim_end();
    let before = match before.strip_suffix('-') {
        Some(rest) if rest.trim().is_empty() => rest,
        _ => before,
    };
    if significant(before) {
        return line;
    }
    (1..line.min(lines.len() + 1))
        .rev()
        .find(|&l| significant(lines[l - 1]))
        .unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(n: &Node) -> Vec<(&str, usize, bool)> {
        match &n.kind {
            Kind::Map(p) => p
                .iter()
                .map(|(k, v)| (k.text().unwrap(), k.line, v.is_null()))
                .collect(),
            _ => panic!("not a map"),
        }
    }

    #[test]
    fn keys_know_their_lines_and_nulls() {
        let n = parse("# c\na: 1\nb:\n\nc: ~\nd: 'null'\ne: {x: 1}\n").unwrap();
        assert_eq!(
            pairs(&n),
            [
                ("a", 2, false),
                ("b", 3, true),
                ("c", 5, true),
                ("d", 6, false),
                ("e", 7, false)
            ]
        );
    }

    #[test]
    fn syntax_errors_and_empty_documents_give_none() {
        assert_eq!(parse("a: [1\n"), None);
        assert_eq!(parse("a: 1\n  b: 2\n"), None);
        assert_eq!(parse("a: \"open\n"), None);
        // An alias to no anchor: serde_norway reports it, with its line.
        assert_eq!(parse("a: *nowhere\n"), None);
        assert_eq!(parse(""), None);
        assert_eq!(parse("# only a comment\n"), None);
        assert!(parse("a: 1\n---\nb: 2\n").is_some());
        // Only the first document is read: a fault further on is serde_norway's to report.
        assert!(parse("a: 1\n---\nb: [\n").is_some());
    }

    fn value(n: &Node, key: &str) -> Node {
        match &n.kind {
            Kind::Map(p) => p
                .iter()
                .find(|(k, _)| k.text() == Some(key))
                .unwrap()
                .1
                .clone(),
            _ => panic!("not a map"),
        }
    }

    #[test]
    fn only_plain_scalars_can_be_null() {
        let n = parse(
            "a: \"\"\nb: ''\nc: !!null\nd: !!str\ne: !!null null\nf: null\ng: NULL\nh: ~\ni:\n",
        )
        .unwrap();
        let nulls: Vec<bool> = "abcdefghi"
            .chars()
            .map(|k| value(&n, &k.to_string()).is_null())
            .collect();
        assert_eq!(
            nulls,
            [false, false, false, false, false, true, true, true, true]
        );
        assert_eq!(
            value(&n, "a").kind,
            Kind::Scalar {
                text: String::new(),
                plain: false
            }
        );
        assert_eq!(value(&n, "i").describe(), "nothing");
    }

    #[test]
    fn aliases_are_alias_nodes() {
        let n = parse("a: &x 1\nb: *x\nc: &m {d: 1}\ne:\n  - *m\n").unwrap();
        let b = value(&n, "b");
        assert_eq!(
            (b.kind.clone(), b.line, b.describe()),
            (Kind::Alias, 2, "an alias")
        );
        let Kind::Seq(items) = value(&n, "e").kind else {
            panic!("not a list")
        };
        assert_eq!((items[0].kind.clone(), items[0].line), (Kind::Alias, 5));
    }

    #[test]
    fn values_are_at_their_own_line_empty_ones_at_their_key() {
        let text = "a:\n\n  # c\n\nb: |\n\n  text\nc:\n  - x\n  -\n  - y\nd:\n  e: {f: }\ng: &anchor\n  h: 1\nl:\n";
        let n = parse(text).unwrap();
        // a has nothing, however many blank and comment lines come before the next key.
        assert_eq!((value(&n, "a").line, value(&n, "a").is_null()), (1, true));
        // A block scalar is at its `|`, not at its text.
        assert_eq!(value(&n, "b").line, 5);
        let c = value(&n, "c");
        let Kind::Seq(items) = &c.kind else {
            panic!("not a list")
        };
        let lines: Vec<(usize, bool)> = items.iter().map(|i| (i.line, i.is_null())).collect();
        assert_eq!(
            (c.line, lines),
            (9, vec![(9, false), (10, true), (11, false)])
        );
        let d = value(&n, "d");
        assert_eq!((d.line, value(&d, "e").line), (13, 13));
        assert_eq!(value(&value(&d, "e"), "f").line, 13);
        // A mapping with an anchor is at its anchor, like libyaml put it.
        assert_eq!(value(&n, "g").line, 14);
        assert_eq!((value(&n, "l").line, value(&n, "l").is_null()), (16, true));
    }

    #[test]
    fn tab_after_colon_is_read_like_libyaml() {
        let n = parse("a: 1\nb:\t2\nc: \"x:\ty\"\nc:\t\t\n").unwrap();
        assert_eq!(
            pairs(&n),
            [
                ("a", 1, false),
                ("b", 2, false),
                ("c", 3, false),
                ("c", 4, true)
            ]
        );
        // A file yaml-rust2 reads as written keeps its tabs.
        let n = parse("c: \"x:\ty\"\n").unwrap();
        assert_eq!(value(&n, "c").text(), Some("x:\ty"));
    }

    #[test]
    fn byte_order_mark_is_no_part_of_the_first_key() {
        let n = parse("\u{feff}a: 1\nb: 2\nb:\n").unwrap();
        assert_eq!(
            pairs(&n),
            [("a", 1, false), ("b", 2, false), ("b", 3, true)]
        );
    }
}
