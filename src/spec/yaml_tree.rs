//! A YAML document as a tree of nodes that know their line, for the structural checks of exectl.yaml and
//! the --images file (duplicate keys, empty values, unknown keys): serde_yaml 0.9 locates none of those
//! right (it takes the last duplicate, or reports line 1). Values are still read by serde_yaml.

use unsafe_libyaml as unsafe_sys;

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

/// The first document's root node; None for a syntax error (serde_yaml reports those with their line) or
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

/// libyaml's events with their 1-based start lines, up to the end of the first document.
fn events(text: &str) -> Option<Vec<(Event, usize)>> {
    let input = text.as_bytes();
    let mut out = Vec::new();
    // SAFETY: the parser lives in a Box that does not move while libyaml holds pointers into it and into
    // `input` (which outlives it); every event is deleted after it is read, and the parser at the end.
    unsafe {
        let parser: *mut unsafe_sys::yaml_parser_t = Box::into_raw(Box::new(
            std::mem::MaybeUninit::<unsafe_sys::yaml_parser_t>::zeroed(),
        ))
        .cast();
        if unsafe_sys::yaml_parser_initialize(parser).fail {
            drop(Box::from_raw(
                parser.cast::<std::mem::MaybeUninit<unsafe_sys::yaml_parser_t>>(),
            ));
            return None;
        }
        unsafe_sys::yaml_parser_set_encoding(parser, unsafe_sys::YAML_UTF8_ENCODING);
        unsafe_sys::yaml_parser_set_input_string(parser, input.as_ptr(), input.len() as u64);
        let mut ok = true;
        loop {
            let mut event = std::mem::MaybeUninit::<unsafe_sys::yaml_event_t>::zeroed();
            if unsafe_sys::yaml_parser_parse(parser, event.as_mut_ptr()).fail {
                ok = false;
                break;
            }
            let e = event.as_mut_ptr();
            let line = (*e).start_mark.line as usize + 1;
            let ev = match (*e).type_ {
                unsafe_sys::YAML_SCALAR_EVENT => {
                    let s = (*e).data.scalar;
                    let bytes = std::slice::from_raw_parts(s.value, s.length as usize);
                    let plain = s.style == unsafe_sys::YAML_PLAIN_SCALAR_STYLE && s.tag.is_null();
                    Event::Scalar(String::from_utf8_lossy(bytes).into_owned(), plain)
                }
                unsafe_sys::YAML_MAPPING_START_EVENT => Event::MapStart,
                unsafe_sys::YAML_MAPPING_END_EVENT => Event::MapEnd,
                unsafe_sys::YAML_SEQUENCE_START_EVENT => Event::SeqStart,
                unsafe_sys::YAML_SEQUENCE_END_EVENT => Event::SeqEnd,
                unsafe_sys::YAML_ALIAS_EVENT => Event::Alias,
                unsafe_sys::YAML_DOCUMENT_END_EVENT | unsafe_sys::YAML_STREAM_END_EVENT => {
                    Event::End
                }
                _ => Event::Other,
            };
            unsafe_sys::yaml_event_delete(e);
            let end = matches!(ev, Event::End);
            out.push((ev, line));
            if end {
                break;
            }
        }
        unsafe_sys::yaml_parser_delete(parser);
        drop(Box::from_raw(
            parser.cast::<std::mem::MaybeUninit<unsafe_sys::yaml_parser_t>>(),
        ));
        ok.then_some(out)
    }
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
        assert_eq!(parse(""), None);
        assert!(parse("a: 1\n---\nb: 2\n").is_some());
    }
}
