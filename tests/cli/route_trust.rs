//! The route surface against a hostile or careless user (issue 35): every finding of the
//! fourth trust round, each in namespaces this test creates (tests/cli/scope.rs's `Three`).

#[allow(unused_imports)]
use super::scope::{A, B, B6, C, Three, ip, ok, states};
