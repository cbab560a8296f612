//! Kubernetes 1.34's base CEL environment, as `k8s.io/apiserver/pkg/cel/environment/base.go` declares it: one row
//! per versioned option set, in its order, with the version that introduced it (and removed it), so that the next
//! Kubernetes version is a diff of [`BASE`]. The checker declares a function only when a row in effect at
//! [`VERSION`] declares it; everything else is `undeclared reference` at compile time, as on a cluster (cel-go's
//! `base64`, `math`, `cel.bind` and strings version 3's `reverse` are not in the base environment).

/// The Kubernetes version whose environment is served (`DefaultCompatibilityVersion` of kube-apiserver 1.34 is
/// 1.33; stored expressions — what a CRD or policy holds once written — see 1.34's).
pub(crate) const VERSION: (u32, u32) = (1, 34);

/// One `VersionedOptions` row of `base.go`.
pub(crate) struct Row {
    /// `IntroducedVersion`.
    pub(crate) introduced: (u32, u32),
    /// `RemovedVersion`, where set.
    pub(crate) removed: Option<(u32, u32)>,
    /// The options, as base.go writes them (for the reader: the table is compared with base.go by eye).
    #[allow(dead_code)]
    pub(crate) options: &'static str,
    /// The functions the row's libraries declare (overloads are the checker's, in `library` and `kubernetes`).
    pub(crate) functions: &'static [&'static str],
    /// The macros it adds (the standard ones are CEL's own).
    pub(crate) macros: &'static [&'static str],
    /// Declared by the row but not ported here: a call type checks as `dyn` and fails when evaluated.
    pub(crate) not_ported: &'static [&'static str],
}

/// CEL's standard library (cel-go's `StdLib`, always there).
const STANDARD: &[&str] = &[
    "_==_",
    "_!=_",
    "_<_",
    "_<=_",
    "_>_",
    "_>=_",
    "@in",
    "_+_",
    "_-_",
    "_*_",
    "_/_",
    "_%_",
    "-_",
    "!_",
    "_&&_",
    "_||_",
    "_?_:_",
    "_[_]",
    "@not_strictly_false",
    "size",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "dyn",
    "type",
    "duration",
    "timestamp",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "getFullYear",
    "getMonth",
    "getDayOfMonth",
    "getDate",
    "getDayOfYear",
    "getDayOfWeek",
    "getHours",
    "getMinutes",
    "getSeconds",
    "getMilliseconds",
];

/// base.go's table.
pub(crate) const BASE: &[Row] = &[
    Row {
        introduced: (1, 0),
        removed: None,
        options: "HomogeneousAggregateLiterals, EagerlyValidateDeclarations, DefaultUTCTimeZone, \
                  library.URLs, library.Regex, library.Lists, PresenceTestHasCost(false)",
        functions: &[
            "url",
            "isURL",
            "getScheme",
            "getHost",
            "getHostname",
            "getPort",
            "getEscapedPath",
            "getQuery",
            "find",
            "findAll",
            "isSorted",
            "sum",
            "min",
            "max",
            "indexOf",
            "lastIndexOf",
        ],
        macros: &[],
        not_ported: &[],
    },
    Row {
        introduced: (1, 27),
        removed: None,
        options: "library.Authz",
        functions: &[
            "path",
            "group",
            "serviceAccount",
            "resource",
            "subresource",
            "namespace",
            "name",
            "check",
            "allowed",
            "reason",
            "errored",
            "error",
        ],
        macros: &[],
        // `authorizer` is bound to null here (no authorizer behind the server): a call errors when evaluated.
        not_ported: &["authorizer"],
    },
    Row {
        introduced: (1, 28),
        removed: None,
        options: "CrossTypeNumericComparisons, OptionalTypes, library.Quantity",
        functions: &[
            "optional.of",
            "optional.ofNonZeroValue",
            "optional.none",
            "hasValue",
            "value",
            "or",
            "orValue",
            "_[?_]",
            "_?._",
            "quantity",
            "isQuantity",
            "sign",
            "isInteger",
            "asInteger",
            "asApproximateFloat",
            "isGreaterThan",
            "isLessThan",
            "compareTo",
            "add",
            "sub",
        ],
        macros: &["optMap", "optFlatMap"],
        not_ported: &[],
    },
    Row {
        introduced: (1, 29),
        removed: None,
        options: "ASTValidators(ValidateDurationLiterals, ValidateTimestampLiterals, ValidateRegexLiterals, \
                  ValidateHomogeneousAggregateLiterals)",
        functions: &[],
        macros: &[],
        not_ported: &[],
    },
    Row {
        introduced: (1, 0),
        removed: Some((1, 29)),
        options: "ext.Strings(StringsVersion(0))",
        functions: &[
            "charAt",
            "indexOf",
            "lastIndexOf",
            "lowerAscii",
            "replace",
            "split",
            "substring",
            "trim",
            "upperAscii",
        ],
        macros: &[],
        not_ported: &[],
    },
    Row {
        introduced: (1, 29),
        removed: None,
        // Version 1 adds `format` and `strings.quote`, version 2 `join`; version 3's `reverse` is not in.
        options: "ext.Strings(StringsVersion(2))",
        functions: &[
            "charAt",
            "indexOf",
            "lastIndexOf",
            "lowerAscii",
            "replace",
            "split",
            "substring",
            "trim",
            "upperAscii",
            "format",
            "strings.quote",
            "join",
        ],
        macros: &[],
        not_ported: &[],
    },
    Row {
        introduced: (1, 29),
        removed: None,
        options: "ext.Sets",
        functions: &["sets.contains", "sets.equivalent", "sets.intersects"],
        macros: &[],
        not_ported: &[],
    },
    Row {
        introduced: (1, 30),
        removed: None,
        options: "library.IP, library.CIDR",
        functions: &[
            "ip",
            "isIP",
            "ip.isCanonical",
            "family",
            "isUnspecified",
            "isLoopback",
            "isLinkLocalMulticast",
            "isLinkLocalUnicast",
            "isGlobalUnicast",
            "cidr",
            "isCIDR",
            "containsIP",
            "containsCIDR",
            "masked",
            "prefixLength",
        ],
        macros: &[],
        not_ported: &[],
    },
    Row {
        introduced: (1, 31),
        removed: None,
        options: "library.Format",
        functions: &[
            "format.named",
            "format.dns1123Label",
            "format.dns1123Subdomain",
            "format.dns1035Label",
            "format.qualifiedName",
            "format.dns1123LabelPrefix",
            "format.dns1123SubdomainPrefix",
            "format.dns1035LabelPrefix",
            "format.labelValue",
            "format.uri",
            "format.uuid",
            "format.byte",
            "format.date",
            "format.datetime",
            "validate",
        ],
        macros: &[],
        not_ported: &[],
    },
    Row {
        introduced: (1, 31),
        removed: None,
        options: "library.AuthzSelectors (feature AuthorizeWithSelectors, on)",
        functions: &["fieldSelector", "labelSelector"],
        macros: &[],
        not_ported: &[],
    },
    Row {
        introduced: (1, 32),
        removed: None,
        options: "ext.TwoVarComprehensions",
        functions: &[super::library::MAP_INSERT],
        macros: &[
            "all",
            "exists",
            "existsOne",
            "exists_one",
            "transformList",
            "transformMap",
            "transformMapEntry",
        ],
        not_ported: &[],
    },
    Row {
        introduced: (1, 33),
        removed: None,
        options: "library.SemverLib(SemverVersion(1))",
        functions: &[
            "semver",
            "isSemver",
            "major",
            "minor",
            "patch",
            "isGreaterThan",
            "isLessThan",
            "compareTo",
        ],
        macros: &[],
        not_ported: &[],
    },
    Row {
        introduced: (1, 33),
        removed: None,
        options: "library.Image",
        functions: &[],
        macros: &[],
        not_ported: &[
            "image",
            "isImage",
            "containsDigest",
            "registry",
            "repository",
            "identifier",
            "tag",
            "digest",
        ],
    },
];

fn in_effect(row: &Row) -> bool {
    row.introduced <= VERSION && row.removed.is_none_or(|r| VERSION < r)
}

/// Whether the environment at [`VERSION`] declares the function `name` (a namespaced one as `ns.f`).
pub(crate) fn declares(name: &str) -> bool {
    STANDARD.contains(&name)
        || BASE
            .iter()
            .filter(|r| in_effect(r))
            .any(|r| r.functions.contains(&name) || r.not_ported.contains(&name))
}

/// Whether the environment at [`VERSION`] adds the macro `name` to CEL's standard ones.
pub(crate) fn declares_macro(name: &str) -> bool {
    BASE.iter().filter(|r| in_effect(r)).any(|r| r.macros.contains(&name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_reads_as_base_go_at_1_34() {
        // Strings version 0 was replaced by version 2 at 1.29.
        let strings: Vec<&Row> = BASE.iter().filter(|r| r.options.starts_with("ext.Strings")).collect();
        assert_eq!(strings.iter().filter(|r| in_effect(r)).count(), 1);
        for f in [
            "format",
            "strings.quote",
            "join",
            "sets.intersects",
            "semver",
            "format.named",
            "cidr",
        ] {
            assert!(declares(f), "{f}");
        }
        for f in [
            "reverse",
            "base64.encode",
            "base64.decode",
            "math.greatest",
            "cel.bind",
            "lists.range",
        ] {
            assert!(!declares(f), "{f}");
        }
    }
}
