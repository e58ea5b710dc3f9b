use crate::{from_str, to_vec, Cells, Parser, Value};

/// `text` read by `value_rows` and by `value`, each followed by `,1]`
/// (the parser must stop where the value ends): the two values equal, the
/// same position after them, and the same bytes written.
fn read_both(text: &str) -> Value {
    let wrapped = format!("[{text},1]");
    let read = |rows: bool| {
        let mut p = Parser::new(&wrapped);
        p.begin_array("a list").expect("an array");
        assert!(p.next_element(&mut true).expect("an element"));
        let v = if rows { p.value_rows() } else { p.value() }.expect("valid");
        (v, p.position())
    };
    let (rows, at) = read(true);
    let (tree, tree_at) = read(false);
    assert_eq!(at, tree_at, "stops where the value ends: {text}");
    assert_eq!(rows, tree, "{text}");
    assert_eq!(tree, rows, "{text}");
    assert_eq!(to_vec(&rows), to_vec(&tree), "{text}");
    assert_eq!(format!("{rows:?}"), format!("{tree:?}"));
    rows
}

fn is_table(v: &Value) -> bool {
    matches!(v, Value::Table(_))
}

#[test]
fn a_list_of_flat_objects_is_kept_by_column_and_reads_as_the_list() {
    let text = r#"[{"name":"http","on":true,"port":8080},{"name":"dns","on":false,"port":-53},{"name":"a\"q","on":true,"port":0}]"#;
    let v = read_both(text);
    let Value::Table(t) = &v else {
        panic!("a table: {v:?}")
    };
    assert_eq!(t.len(), 3);
    assert_eq!(t.keys(), ["name", "on", "port"]);
    assert_eq!(t.column("port"), Some(Cells::Int(&[8080, -53, 0])));
    assert_eq!(t.column("on"), Some(Cells::Bool(&[true, false, true])));
    let Some(Cells::Str(names)) = t.column("name") else {
        panic!("a string column")
    };
    assert!(names.iter().eq(["http", "dns", "a\"q"]));
    assert_eq!(t.column("missing"), None);
    // Looked for at a place first: right, wrong, or past the keys, the
    // same column (or none).
    for hint in 0..4 {
        assert_eq!(t.column_hinted("port", hint), t.column("port"), "{hint}");
        assert_eq!(t.column_hinted("on", hint), t.column("on"), "{hint}");
        assert_eq!(t.column_hinted("missing", hint), None, "{hint}");
    }
    assert_eq!(v[1]["port"], -53);
    assert_eq!(v.pointer("/2/name"), Some(&Value::from("a\"q")));
    assert!(v.is_array());
    assert_eq!(v.as_array().map(Vec::len), Some(3));
    assert_eq!(v, from_str(text).expect("valid"));
}

#[test]
fn a_row_written_with_white_space_part_way_is_read_token_by_token() {
    // The second row's first cell is read as compact text, then its
    // second key is not: the cell read is dropped, and the row read again.
    let v = read_both(r#"[{"a":1,"b":"x"},{"a":2, "b":"y"},{"a":3,"b":"z"}]"#);
    let Value::Table(t) = &v else {
        panic!("a table: {v:?}")
    };
    assert_eq!(t.column("a"), Some(Cells::Int(&[1, 2, 3])));
    let Some(Cells::Str(b)) = t.column("b") else {
        panic!("a string column")
    };
    assert!(b.iter().eq(["x", "y", "z"]));
    // The same with escaped strings: the cells decoded from the compact
    // read of the second row are dropped with it, not kept twice.
    let v = read_both(r#"[{"a":"\u0078","b":1},{"a":"\u0079", "b":2},{"a":"z","b":3}]"#);
    let Value::Table(t) = &v else {
        panic!("a table: {v:?}")
    };
    let Some(Cells::Str(a)) = t.column("a") else {
        panic!("a string column")
    };
    assert!(a.iter().eq(["x", "y", "z"]));
}

#[test]
fn an_element_that_does_not_fit_turns_the_rest_into_a_tree() {
    for text in [
        // A key missing, one more, another order, another key.
        r#"[{"a":1,"b":"x"},{"a":2}]"#,
        r#"[{"a":1,"b":"x"},{"a":2,"b":"y","c":3}]"#,
        r#"[{"a":1,"b":"x"},{"b":"y","a":2}]"#,
        r#"[{"a":1,"b":"x"},{"a":2,"c":"y"}]"#,
        // A key written with an escape.
        r#"[{"a":1,"b":"x"},{"\u0061":2,"b":"y"}]"#,
        // A value of another kind: a string, a float, a big number, a
        // null, an object, a list.
        r#"[{"a":1,"b":"x"},{"a":"2","b":"y"}]"#,
        r#"[{"a":1,"b":"x"},{"a":2.5,"b":"y"}]"#,
        r#"[{"a":1,"b":"x"},{"a":18446744073709551615,"b":"y"}]"#,
        r#"[{"a":1,"b":"x"},{"a":null,"b":"y"}]"#,
        r#"[{"a":1,"b":"x"},{"a":1,"b":{"c":1}}]"#,
        r#"[{"a":true,"b":"x"},{"a":1,"b":"x"}]"#,
        // Rows with escaped strings before the one that does not fit: the
        // rows read keep their decoded strings.
        r#"[{"a":"\u0078","b":1},{"a":"y\n","b":2},{"a":3,"b":"z"}]"#,
        // Not an object, after rows and before more rows.
        r#"[{"a":1},{"a":2},3,{"a":4}]"#,
        r#"[{"a":1},{"a":2},{"a":3,"b":1},{"a":4}]"#,
        // White space inside the rows.
        "[ {\"a\" : 1 , \"b\":\"x\" } ,\n{\"a\":2,\"b\":\"y\"} ]",
    ] {
        let v = read_both(text);
        if text.starts_with("[ ") {
            assert!(is_table(&v), "white space is no reason to give up: {v:?}");
        } else {
            assert!(!is_table(&v), "{text}");
        }
    }
}

#[test]
fn lists_whose_first_element_is_no_flat_object_are_trees() {
    for text in [
        "[]",
        "[1,2]",
        r#"["a",{"a":1}]"#,
        r#"[{}]"#,
        r#"[{"b":1,"a":2}]"#,
        r#"[{"a":1,"a":2}]"#,
        r#"[{"a":-0}]"#,
        r#"[{"a":1e3}]"#,
        r#"[{"a":[1]}]"#,
        r#"[{"a":null}]"#,
        "[[1],[2]]",
        "3",
        r#""x""#,
        r#"{"a":[{"b":1}]}"#,
    ] {
        let v = read_both(text);
        assert!(!is_table(&v), "{text}: {v:?}");
    }
    // One element is a table of one row; a first key written with an
    // escape is the key it spells (later rows must spell it plainly).
    assert!(is_table(&read_both(r#"[{"a":1}]"#)));
    assert!(is_table(&read_both(r#"[{"\u0061":1},{"a":2}]"#)));
}

#[test]
fn text_that_is_not_json_fails_as_the_tree_fails() {
    for text in [
        r#"[{"a":1},{"a":2}"#,
        r#"[{"a":1},{"a":2},]"#,
        r#"[{"a":1},{"a":2,}]"#,
        r#"[{"a":1},{"a" 2}]"#,
        r#"[{"a":1},{"a":01}]"#,
        r#"[{"a":"x"},{"a":"unterminated}]"#,
        r#"[{"a":"x"},{"a":"bad \q escape"}]"#,
        r#"[{"a":1} {"a":2}]"#,
        r#"[{"a":1},{"a":tru}]"#,
        r#"[{"a":1},{"a":2}}"#,
        // Ending where a compact row's pieces are matched.
        r#"[{"a":1},{"#,
        r#"[{"a":1},{"a":"#,
        r#"[{"a":1,"b":"x"},{"a":2,"b":"#,
    ] {
        let rows = Parser::new(text).value_rows().expect_err(text);
        let tree = Parser::new(text).value().expect_err(text);
        assert_eq!(rows.to_string(), tree.to_string(), "{text}");
    }
}

#[test]
fn rows_spelled_otherwise_and_tables_past_their_room_stay_tables() {
    // White space after a later row's colon, around its comma, or before
    // it: each such row is read token by token, and the list stays a
    // table.
    for text in [
        r#"[{"a":1,"b":"x"},{"a": 2,"b":"y"},{"a":3,"b":"z"}]"#,
        r#"[{"a":1,"b":"x"},{"a":2,"b": "y"}]"#,
        r#"[{"a":1}, {"a":2},{"a":3}]"#,
        r#"[{"a":1} ,{"a":2}]"#,
        // White space inside the first row: the later rows' keys are
        // spelled anew rather than taken from its text (before its `{`,
        // outside its pieces, it changes nothing).
        r#"[{"a":1, "b":"x"},{"a":2,"b":"y"},{"a":3,"b":"z"}]"#,
        r#"[{"a" :1,"b":"x"},{"a":2,"b":"y"}]"#,
        r#"[ {"a":1,"b":"x"},{"a":2,"b":"y"}]"#,
    ] {
        let v = read_both(text);
        assert!(is_table(&v), "{text}: {v:?}");
    }
    // More rows than a column's first room, more keys than the table's.
    let long: Vec<String> = (0..70)
        .map(|i| format!(r#"{{"n":"p{i}","port":{i}}}"#))
        .collect();
    let keys: Vec<String> = (0..12).map(|k| format!(r#""k{k:02}":{k}"#)).collect();
    let wide = format!("{{{}}}", keys.join(","));
    for text in [
        format!("[{}]", long.join(",")),
        format!("[{wide},{wide},{wide}]"),
    ] {
        let v = read_both(&text);
        let Value::Table(t) = &v else {
            panic!("a table: {v:?}")
        };
        assert!(t.len() == 70 || t.keys().len() == 12, "{text}");
    }
}

#[test]
fn a_table_changed_in_place_becomes_its_list() {
    let text = r#"[{"a":1,"b":"x"},{"a":2,"b":"y"}]"#;
    let mut v = Parser::new(text).value_rows().expect("valid");
    assert!(is_table(&v));
    let copy = v.clone();
    v.as_array_mut().expect("a list")[0]["a"] = Value::from(5);
    assert!(matches!(v, Value::Array(_)));
    assert_eq!(
        v,
        from_str(r#"[{"a":5,"b":"x"},{"a":2,"b":"y"}]"#).expect("valid")
    );
    // The copy is untouched, and equal to the text's list.
    assert_eq!(copy, from_str(text).expect("valid"));
    assert_ne!(copy, v);
    let json: serde_json::Value = (&copy).into();
    assert_eq!(copy, json);
}

#[test]
fn tables_of_the_same_strings_written_differently_are_equal() {
    let escaped = Parser::new(r#"[{"a":"h\u0074tp","b":1},{"a":"x\n","b":2}]"#)
        .value_rows()
        .expect("valid");
    let plain = Parser::new(r#"[{"a":"http","b":1},{"a":"x\n","b":2}]"#)
        .value_rows()
        .expect("valid");
    assert!(is_table(&escaped) && is_table(&plain));
    assert_eq!(escaped, plain);
    // The decoded strings read as the column's, in their rows' order,
    // among strings read as written.
    let mixed = Parser::new(r#"[{"a":"p\"q"},{"a":"plain"},{"a":"\u00e9t\u00e9"},{"a":""}]"#)
        .value_rows()
        .expect("valid");
    let Value::Table(t) = &mixed else {
        panic!("a table: {mixed:?}")
    };
    let Some(Cells::Str(a)) = t.column("a") else {
        panic!("a string column")
    };
    assert_eq!(a.len(), 4);
    assert!(a.iter().eq(["p\"q", "plain", "été", ""]));
    assert_eq!((a.get(2), a.get(4)), (Some("été"), None));
    assert_eq!(escaped.clone(), plain);
    let other = Parser::new(r#"[{"a":"https","b":1},{"a":"x\n","b":2}]"#)
        .value_rows()
        .expect("valid");
    assert_ne!(other, plain);
    assert_eq!(
        to_vec(&escaped),
        br#"[{"a":"http","b":1},{"a":"x\n","b":2}]"#
    );
}

#[test]
fn int_cells_hold_every_i64_as_the_tree_does() {
    let v = read_both(
        r#"[{"a":999999999999999999},{"a":-9223372036854775808},{"a":9223372036854775807},{"a":0},{"a":-0}]"#,
    );
    // `-0` is a float to the tree: the list stops being a table there.
    assert!(!is_table(&v));
    let v = read_both(
        r#"[{"a":999999999999999999},{"a":-9223372036854775808},{"a":9223372036854775807},{"a":0}]"#,
    );
    let Value::Table(t) = &v else {
        panic!("a table: {v:?}")
    };
    assert_eq!(
        t.column("a"),
        Some(Cells::Int(&[
            999_999_999_999_999_999,
            i64::MIN,
            i64::MAX,
            0
        ]))
    );
}
