//! Self-tests of the check vocabulary (`eval`): each operator and expectation key
//! must fail on a wrong result, so a conformance pass means something.

use serde_json::{Value, json};

use super::eval::{CallResult, run_case};

fn case(expectations: Value) -> Value {
    let mut c = json!({"name": "t", "function": "f", "input": {"x": 1}});
    for (k, v) in expectations.as_object().unwrap() {
        c[k] = v.clone();
    }
    c
}

fn run(expectations: Value, result: CallResult) -> Result<(), String> {
    run_case(&case(expectations), &[], &mut |_| result.clone())
}

#[test]
fn each_operator_passes_and_fails() {
    let r = json!({"a": [{"id": "x", "m": "p"}, {"m": "q"}], "s": "Hello", "k": {"b": 1}});
    let good = [
        json!({"path": "a[id=x].m", "equals": "p"}),
        json!({"path": "a[id=null].m", "equals": "q"}),
        json!({"path": "a[*].m", "set_equals": ["q", "p"]}),
        json!({"path": "a[*].m", "contains_all": ["p"]}),
        json!({"path": "a", "length": 2}),
        json!({"path": "k", "key_set": ["b"]}),
        json!({"path": "zz", "absent": true}),
        json!({"path": "zz", "not_equals": 1}),
        json!({"path": "s", "matches": "H.*o"}),
        json!({"path": "s", "stripped_equals": "Hello"}),
        json!({"path": "a[*].m", "any_item_contains_ci": "P"}),
    ];
    for check in good {
        let c = json!({ "expected_checks": [check.clone()] });
        assert_eq!(run(c, Ok(r.clone())), Ok(()), "{check}");
    }
    let bad = [
        json!({"path": "a[id=x].m", "equals": "q"}),
        json!({"path": "a[*].m", "set_equals": ["p"]}),
        json!({"path": "k", "lacks_key": "b"}),
        json!({"path": "s", "matches": "ell"}),
        json!({"path": "s", "not_starts_with": "He"}),
        json!({"path": "a[*].m", "any_item_contains": "P"}),
        json!({"path": "s", "bogus_op": 1}),
    ];
    for check in bad {
        let c = json!({ "expected_checks": [check.clone()] });
        assert!(run(c, Ok(r.clone())).is_err(), "{check}");
    }
}

#[test]
fn whole_results_errors_and_unknown_keys() {
    assert!(
        run(
            json!({"expected": {"a": 1, "b": 2}}),
            Ok(json!({"b": 2, "a": 1}))
        )
        .is_ok()
    );
    assert!(run(json!({"expected": {"a": 1}}), Ok(json!({"a": 2}))).is_err());
    assert!(
        run(
            json!({"expected_subset": {"a": 1}}),
            Ok(json!({"a": 1, "z": 0}))
        )
        .is_ok()
    );
    let err = json!({"expected_error": {"type": "ValueError", "contains": ["bad"]}});
    assert!(run(err.clone(), Err("a bad id".into())).is_ok());
    assert!(run(err.clone(), Err("other".into())).is_err());
    assert!(run(err, Ok(json!(1))).is_err());
    assert!(run(json!({"expected_mystery": 1}), Ok(json!(1))).is_err());
}

#[test]
fn mutation_steps_must_not_reach_the_input() {
    let c = json!({
        "then_mutate_result": [{"path": "x", "set": 2}],
        "expected_input_after_mutation": {"x": 1}
    });
    assert!(run(c.clone(), Ok(json!({"x": 1}))).is_ok());
    assert!(
        run(c, Ok(json!({"y": 1}))).is_err(),
        "a missing mutation path fails"
    );
}
