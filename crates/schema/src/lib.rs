//! The structural-schema model: what celhook needs of a CRD version's
//! `openAPIV3Schema` (types, formats, list and map semantics, the
//! Kubernetes extensions), built once at load from k8s-openapi's
//! `JSONSchemaProps`, plus the CEL property-name escaping rules.

mod escape;
mod nested;
mod properties;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool, ValidationRule,
};

pub use escape::{escape_property, unescape_property};
pub use properties::Properties;

/// The `type` of a schema node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    Object,
    Array,
    String,
    Integer,
    Number,
    Boolean,
    /// No `type`: `x-kubernetes-int-or-string`, or
    /// `x-kubernetes-preserve-unknown-fields` data of any shape.
    Any,
}

impl Type {
    /// The OpenAPI name, as the API server prints it in field errors
    /// (`Invalid value: "object"`).
    pub fn openapi_name(self) -> &'static str {
        match self {
            Type::Object => "object",
            Type::Array => "array",
            Type::String => "string",
            Type::Integer => "integer",
            Type::Number => "number",
            Type::Boolean => "boolean",
            Type::Any => "",
        }
    }
}

/// String formats that change the CEL type of a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Format {
    None,
    /// base64: CEL `bytes`.
    Byte,
    /// `2006-01-02`: CEL `timestamp`.
    Date,
    /// RFC 3339: CEL `timestamp`.
    DateTime,
    /// Go duration string: CEL `duration`.
    Duration,
    /// Any other format: still a CEL `string`.
    Other(String),
}

/// `x-kubernetes-list-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ListType {
    #[default]
    Atomic,
    Set,
    Map,
}

/// One node of a structural schema.
#[derive(Debug, Clone)]
pub struct Schema {
    pub ty: Type,
    pub format: Format,
    pub nullable: bool,
    /// `properties`, by their JSON names.
    pub properties: Properties,
    /// `additionalProperties` as a schema: the node is a CEL map.
    pub additional_properties: Option<Box<Schema>>,
    /// `items` of an array.
    pub items: Option<Box<Schema>>,
    pub required: Vec<String>,
    pub max_items: Option<i64>,
    pub max_length: Option<i64>,
    /// The length in bytes of the longest `enum` string, when the node
    /// lists its values (the cost estimate's size bound).
    pub max_enum_bytes: Option<usize>,
    pub max_properties: Option<i64>,
    pub list_type: ListType,
    pub list_map_keys: Vec<String>,
    pub preserve_unknown_fields: bool,
    pub embedded_resource: bool,
    pub int_or_string: bool,
    /// `x-kubernetes-validations` of this node, as written.
    pub validations: Vec<ValidationRule>,
}

impl Schema {
    /// A node with no type and nothing declared (data of any shape when
    /// `preserve_unknown_fields`).
    pub const fn untyped(preserve_unknown_fields: bool) -> Schema {
        Schema {
            ty: Type::Any,
            format: Format::None,
            nullable: false,
            properties: Properties::new(),
            additional_properties: None,
            items: None,
            required: Vec::new(),
            max_items: None,
            max_length: None,
            max_enum_bytes: None,
            max_properties: None,
            list_type: ListType::Atomic,
            list_map_keys: Vec::new(),
            preserve_unknown_fields,
            embedded_resource: false,
            int_or_string: false,
            validations: Vec::new(),
        }
    }
}

impl Default for Schema {
    fn default() -> Self {
        Schema::untyped(false)
    }
}

/// A schema the model cannot represent, with its path
/// (`properties[spec].items`, relative to `openAPIV3Schema`).
/// A structural part of a schema that is not structural as a whole.
#[derive(Debug, Clone)]
pub struct PartialSubtree {
    /// Its path, e.g. `openAPIV3Schema.properties[a]`.
    pub path: String,
    pub schema: Schema,
    /// The ancestor below which old and new values cannot be paired, if any.
    pub uncorrelatable: Option<String>,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{path}: {reason}")]
pub struct SchemaError {
    pub path: String,
    pub reason: String,
}

impl Schema {
    /// Builds the model of a version's `openAPIV3Schema`. The root gets the
    /// implicit `apiVersion`, `kind` and `metadata` (name, generateName) that
    /// the API server exposes to CEL.
    pub fn from_openapi(props: &JSONSchemaProps) -> Result<Schema, SchemaError> {
        if let Some(first) = nested::problems(props).into_iter().next() {
            return Err(first);
        }
        let mut root = Self::build(props, "openAPIV3Schema")?;
        if root.ty == Type::Any && !root.int_or_string {
            root.ty = Type::Object;
        }
        root.add_object_meta();
        Ok(root)
    }

    /// For a schema [`Schema::from_openapi`] refuses: every structural
    /// problem, each at the deepest node it belongs to, and the largest
    /// subtrees that are structural and carry rules, by path. The API
    /// server checks the rules of such subtrees (and reports theirs
    /// problems too), but skips the rules of every node with a structural
    /// problem at or below it, and every rule when a value validation
    /// under `allOf`/`anyOf`/`oneOf`/`not` declares what it must not.
    pub fn partial(props: &JSONSchemaProps) -> (Vec<SchemaError>, Vec<PartialSubtree>) {
        let mut errors = nested::problems(props);
        let mut subtrees = Vec::new();
        let nested_problems = !errors.is_empty();
        Self::partial_at(props, "openAPIV3Schema", None, &mut errors, &mut subtrees);
        if nested_problems {
            subtrees.clear();
        }
        (errors, subtrees)
    }

    /// True when the subtree at `path` is structural.
    fn partial_at(
        p: &JSONSchemaProps,
        path: &str,
        uncorrelatable: Option<&str>,
        errors: &mut Vec<SchemaError>,
        subtrees: &mut Vec<PartialSubtree>,
    ) -> bool {
        let local = match Self::build(p, path) {
            Ok(schema) => {
                if schema.has_rules_below() {
                    subtrees.push(PartialSubtree {
                        path: path.to_owned(),
                        schema,
                        uncorrelatable: uncorrelatable.map(str::to_owned),
                    });
                }
                return true;
            }
            Err(e) => e,
        };
        // Below a map of a type the API server does not know, old and new
        // values cannot be paired: transition rules there are refused.
        let unknown_map_type = local.path == format!("{path}.x-kubernetes-map-type");
        let below = if unknown_map_type && uncorrelatable.is_none() {
            Some(path)
        } else {
            uncorrelatable
        };
        let mut children_structural = true;
        for (name, child) in p.properties.iter().flatten() {
            let child_path = format!("{path}.properties[{name}]");
            children_structural &= Self::partial_at(child, &child_path, below, errors, subtrees);
        }
        if let Some(JSONSchemaPropsOrBool::Schema(s)) = &p.additional_properties {
            let child_path = format!("{path}.additionalProperties");
            children_structural &= Self::partial_at(s, &child_path, below, errors, subtrees);
        }
        if let Some(JSONSchemaPropsOrArray::Schema(s)) = &p.items {
            let child_path = format!("{path}.items");
            children_structural &= Self::partial_at(s, &child_path, below, errors, subtrees);
        }
        // Every child is fine: the problem is this node's own.
        if children_structural {
            errors.push(local);
        }
        false
    }

    fn build(p: &JSONSchemaProps, path: &str) -> Result<Schema, SchemaError> {
        let err = |reason: String| SchemaError {
            path: path.to_owned(),
            reason,
        };
        let ty = match p.type_.as_deref() {
            None | Some("") => Type::Any,
            Some("object") => Type::Object,
            Some("array") => Type::Array,
            Some("string") => Type::String,
            Some("integer") => Type::Integer,
            Some("number") => Type::Number,
            Some("boolean") => Type::Boolean,
            Some(other) => return Err(err(format!("unsupported type {other:?}"))),
        };
        let format = match p.format.as_deref() {
            None | Some("") => Format::None,
            Some("byte") => Format::Byte,
            Some("date") => Format::Date,
            Some("date-time") | Some("datetime") => Format::DateTime,
            Some("duration") => Format::Duration,
            Some(other) => Format::Other(other.to_owned()),
        };
        let mut properties = Properties::new();
        for (name, child) in p.properties.iter().flatten() {
            let child_path = format!("{path}.properties[{name}]");
            properties.insert(name.clone(), Self::build(child, &child_path)?);
        }
        let additional_properties = match &p.additional_properties {
            Some(JSONSchemaPropsOrBool::Schema(s)) => Some(Box::new(Self::build(
                s,
                &format!("{path}.additionalProperties"),
            )?)),
            Some(JSONSchemaPropsOrBool::Bool(true)) => Some(Box::default()),
            Some(JSONSchemaPropsOrBool::Bool(false)) | None => None,
        };
        // `additionalProperties: false` or a schema excludes `properties`;
        // `true` beside them only keeps unknown fields, as
        // x-kubernetes-preserve-unknown-fields does (the node stays an object).
        let exclusive = matches!(
            p.additional_properties,
            Some(JSONSchemaPropsOrBool::Schema(_) | JSONSchemaPropsOrBool::Bool(false))
        );
        let (additional_properties, keeps_unknown) = match additional_properties {
            Some(_) if !exclusive && !properties.is_empty() => (None, true),
            other => (other, false),
        };
        if exclusive && !properties.is_empty() {
            return Err(SchemaError {
                path: format!("{path}.additionalProperties"),
                reason: "Forbidden: additionalProperties and properties are mutual exclusive"
                    .into(),
            });
        }
        match p.x_kubernetes_map_type.as_deref() {
            None | Some("atomic") | Some("granular") => {}
            Some(other) => {
                return Err(SchemaError {
                    path: format!("{path}.x-kubernetes-map-type"),
                    reason: format!(
                        "Unsupported value: {other:?}: supported values: \"atomic\", \"granular\""
                    ),
                })
            }
        }
        let items = match &p.items {
            Some(JSONSchemaPropsOrArray::Schema(s)) => {
                Some(Box::new(Self::build(s, &format!("{path}.items"))?))
            }
            Some(JSONSchemaPropsOrArray::Schemas(_)) => {
                return Err(err("items must be a schema object and not an array".into()))
            }
            None => None,
        };
        if ty == Type::Array && items.is_none() {
            return Err(err("items must be specified".into()));
        }
        let list_type = match p.x_kubernetes_list_type.as_deref() {
            None | Some("atomic") => ListType::Atomic,
            Some("set") => ListType::Set,
            Some("map") => ListType::Map,
            Some(other) => {
                return Err(err(format!(
                    "x-kubernetes-list-type: unsupported value {other:?}: supported values: \"atomic\", \"map\", \"set\""
                )))
            }
        };
        Ok(Schema {
            ty,
            format,
            nullable: p.nullable.unwrap_or(false),
            properties,
            additional_properties,
            items,
            required: p.required.clone().unwrap_or_default(),
            max_items: p.max_items,
            max_length: p.max_length,
            max_enum_bytes: p.enum_.as_ref().and_then(|values| {
                values
                    .iter()
                    .map(|v| v.0.as_str().map(str::len))
                    .collect::<Option<Vec<_>>>()
                    .and_then(|lens| lens.into_iter().max())
            }),
            max_properties: p.max_properties,
            list_type,
            list_map_keys: p.x_kubernetes_list_map_keys.clone().unwrap_or_default(),
            preserve_unknown_fields: keeps_unknown
                || p.x_kubernetes_preserve_unknown_fields.unwrap_or(false),
            embedded_resource: p.x_kubernetes_embedded_resource.unwrap_or(false),
            int_or_string: p.x_kubernetes_int_or_string.unwrap_or(false),
            validations: p.x_kubernetes_validations.clone().unwrap_or_default(),
        }
        .with_embedded_meta())
    }

    fn with_embedded_meta(mut self) -> Self {
        if self.embedded_resource {
            self.add_object_meta();
        }
        self
    }

    /// Root objects and embedded resources expose apiVersion, kind and, of
    /// metadata, only name and generateName; whatever the CRD declares under
    /// `metadata` beyond those stays out of CEL's reach, unless the node
    /// declares all four as strings: then the API server takes the node as
    /// written, other metadata fields included (and no length bounds).
    fn add_object_meta(&mut self) {
        let is_string = |s: Option<&Schema>| s.is_some_and(|s| s.ty == Type::String);
        let meta = self.property("metadata").filter(|m| m.ty == Type::Object);
        if is_string(self.property("kind"))
            && is_string(self.property("apiVersion"))
            && meta.is_some_and(|m| {
                is_string(m.property("name")) && is_string(m.property("generateName"))
            })
        {
            return;
        }
        let string = || Schema {
            ty: Type::String,
            ..Schema::default()
        };
        self.properties.get_or_insert_with("apiVersion", string);
        self.properties.get_or_insert_with("kind", string);
        let mut meta = self.properties.remove("metadata").unwrap_or_default();
        meta.ty = Type::Object;
        meta.additional_properties = None;
        meta.preserve_unknown_fields = false;
        let keep = |name: &str| {
            let mut s = meta.properties.get(name).cloned().unwrap_or_else(string);
            s.ty = Type::String;
            s
        };
        // The API server bounds them as it validates names.
        let bounded = |mut s: Schema, max: i64| {
            s.max_length = Some(s.max_length.map_or(max, |m| m.min(max)));
            s
        };
        let name = bounded(keep("name"), 253);
        let generate_name = bounded(keep("generateName"), 252);
        meta.properties = [
            ("name".to_owned(), name),
            ("generateName".to_owned(), generate_name),
        ]
        .into_iter()
        .collect();
        self.properties.insert("metadata".into(), meta);
    }

    /// An "unknown type": no type and preserved unknown fields, or a list or
    /// map of such. CEL cannot see these values.
    pub fn is_unknown_type(&self) -> bool {
        match self.ty {
            Type::Any => !self.int_or_string && self.properties.is_empty(),
            Type::Array => self.items.as_deref().is_some_and(Schema::is_unknown_type),
            Type::Object => self
                .additional_properties
                .as_deref()
                .is_some_and(Schema::is_unknown_type),
            _ => false,
        }
    }

    /// True for an object with `additionalProperties` (a CEL map).
    pub fn is_map(&self) -> bool {
        self.additional_properties.is_some()
    }

    /// The schema of a property, by its JSON name.
    pub fn property(&self, name: &str) -> Option<&Schema> {
        self.properties.get(name)
    }

    /// The schema of map values or list items.
    pub fn element(&self) -> Option<&Schema> {
        self.items
            .as_deref()
            .or(self.additional_properties.as_deref())
    }

    /// True when this node or any node below it carries validation rules.
    pub fn has_rules_below(&self) -> bool {
        !self.validations.is_empty()
            || self.properties.values().any(Schema::has_rules_below)
            || self.element().is_some_and(Schema::has_rules_below)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(v: serde_json::Value) -> JSONSchemaProps {
        serde_json::from_value(v).expect("valid JSONSchemaProps")
    }

    #[test]
    fn root_gets_api_version_kind_and_restricted_metadata() {
        let s = Schema::from_openapi(&props(serde_json::json!({
            "type": "object",
            "properties": {
                "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}},
                "spec": {"type": "object"}
            }
        })))
        .unwrap();
        assert!(s.property("apiVersion").is_some());
        assert!(s.property("kind").is_some());
        let meta = s.property("metadata").unwrap();
        let names: Vec<_> = meta.properties.keys().cloned().collect();
        assert_eq!(names, ["generateName", "name"]);
    }

    #[test]
    fn formats_and_list_types_are_read() {
        let s = Schema::from_openapi(&props(serde_json::json!({
            "type": "object",
            "properties": {
                "when": {"type": "string", "format": "date-time"},
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}
            }
        })))
        .unwrap();
        assert_eq!(s.property("when").unwrap().format, Format::DateTime);
        assert_eq!(s.property("tags").unwrap().list_type, ListType::Set);
    }

    #[test]
    fn bad_list_type_is_refused_with_its_path() {
        let e = Schema::from_openapi(&props(serde_json::json!({
            "type": "object",
            "properties": {"tags": {"type": "array", "x-kubernetes-list-type": "bag", "items": {"type": "string"}}}
        })))
        .unwrap_err();
        assert_eq!(e.path, "openAPIV3Schema.properties[tags]");
        assert!(e.reason.contains("bag"), "{}", e.reason);
    }

    #[test]
    fn rules_below_are_found() {
        let s = Schema::from_openapi(&props(serde_json::json!({
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {
                "n": {"type": "integer", "x-kubernetes-validations": [{"rule": "self > 0"}]}}}}
        })))
        .unwrap();
        assert!(s.has_rules_below());
        assert!(!s.property("apiVersion").unwrap().has_rules_below());
    }
}
