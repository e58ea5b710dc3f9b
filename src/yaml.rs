//! YAML streams split into their documents, for the config loader and the
//! offline `convert`: each document is parsed on its own, so that one bad
//! document costs only itself (serde_norway's multi-document reader stops
//! at the first), and both count documents the same way.

/// The documents of a YAML stream, each with the number of lines before
/// it, split at `---` and `...` lines (which YAML forbids at the start of a
/// line inside any scalar) so that each is parsed on its own:
/// serde_norway's multi-document reader stops at the first bad one. A
/// marker on the first line opens the first document, so indexes count as
/// the config loader counts them.
pub fn yaml_documents(text: &str) -> Vec<(usize, &str)> {
    let mut docs = Vec::new();
    let (mut start, mut start_line) = (0, 0);
    let mut offset = 0;
    for (number, line) in text.split_inclusive('\n').enumerate() {
        let bare = line.trim_end_matches(['\n', '\r']);
        let content_follows = bare.starts_with("--- ") || bare.starts_with("---\t");
        if bare == "---" || bare == "..." || content_follows {
            if offset > 0 || bare == "..." {
                docs.push((start_line, &text[start..offset]));
            }
            // `--- {a: 1}`: the document may start on the marker's line.
            if content_follows {
                (start, start_line) = (offset + 4, number);
            } else {
                (start, start_line) = (offset + line.len(), number + 1);
            }
        }
        offset += line.len();
    }
    docs.push((start_line, &text[start..]));
    docs
}

/// True for a document of nothing but blank lines and comments.
pub fn is_blank(doc: &str) -> bool {
    doc.lines().all(|l| {
        let l = l.trim();
        l.is_empty() || l.starts_with('#')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_streams_split_at_marker_lines_only() {
        assert_eq!(yaml_documents("a: 1\n"), [(0, "a: 1\n")]);
        assert_eq!(
            yaml_documents("---\na: 1\n---\nb: 2\n"),
            [(1, "a: 1\n"), (3, "b: 2\n")]
        );
        assert_eq!(
            yaml_documents("a: 1\n--- {b: 2}\n...\nc: '---'\n"),
            [(0, "a: 1\n"), (1, "{b: 2}\n"), (3, "c: '---'\n")]
        );
        assert_eq!(
            yaml_documents("a: |\n  ---x\n---\r\nb: 2"),
            [(0, "a: |\n  ---x\n"), (3, "b: 2")]
        );
        // Not markers: an indented `---`, a longer dash run.
        assert_eq!(yaml_documents("a: |\n  ---\nb: ----\n").len(), 1);
        assert!(is_blank("# only a comment\n\n"));
        assert!(!is_blank("# c\na: 1\n"));
    }
}
