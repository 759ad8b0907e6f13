//! A tiny arithmetic language for profile templates: numbers, named facts, `+ - * /`,
//! comparisons, `&& || !`, parentheses and the functions `min`, `max`, `ceil`, `floor`,
//! `round_up(x, m)` and `cur(i)` (field `i` of the key's running value, 0 when unknown).
//! Booleans are numbers: 0 is false, anything else true.

use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Num(f64),
    Var(String),
    Neg(Box<Expr>),
    Not(Box<Expr>),
    Bin(Op, Box<Expr>, Box<Expr>),
    Call(String, Vec<Expr>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    And,
    Or,
}

/// Values an expression can see.
pub struct Env<'a> {
    pub facts: &'a BTreeMap<String, f64>,
    /// Fields of the running value of the key being rendered.
    pub current: Option<&'a [f64]>,
}

const FUNCS: &[(&str, usize)] = &[
    ("min", 2),
    ("max", 2),
    ("ceil", 1),
    ("floor", 1),
    ("round_up", 2),
    ("cur", 1),
];

/// Deepest nesting of parentheses, calls and unary operators the parser accepts. The parser
/// recurses once per level: a bound keeps a hostile profile (10,000 `(`) from overflowing
/// the stack; real templates nest two or three deep.
pub const MAX_DEPTH: usize = 64;
/// Most tokens in one expression. `1+1+1+...` builds a tree as deep as it is long without
/// nesting, and evaluating or dropping that tree recurses: this bounds the tree's depth too.
pub const MAX_TOKENS: usize = 256;

pub fn parse(src: &str) -> Result<Expr, String> {
    parse_inner(src).map_err(|e| {
        // A message may quote a token (a 10,000-letter name): keep it a short line.
        if e.chars().count() > 160 {
            format!("{}...", e.chars().take(160).collect::<String>())
        } else {
            e
        }
    })
}

fn parse_inner(src: &str) -> Result<Expr, String> {
    let toks = lex(src)?;
    if toks.len() > MAX_TOKENS {
        return Err(format!(
            "expression too long ({} tokens, at most {MAX_TOKENS})",
            toks.len()
        ));
    }
    let mut p = Parser { toks, pos: 0, depth: 0 };
    let e = p.or()?;
    if p.pos != p.toks.len() {
        return Err(format!("unexpected {:?} in \"{}\"", p.toks[p.pos], excerpt(src)));
    }
    Ok(e)
}

impl Expr {
    /// Every variable the expression names, to check them against the known facts at load time.
    pub fn vars(&self, out: &mut Vec<String>) {
        match self {
            Self::Num(_) => {}
            Self::Var(v) => out.push(v.clone()),
            Self::Neg(e) | Self::Not(e) => e.vars(out),
            Self::Bin(_, a, b) => {
                a.vars(out);
                b.vars(out);
            }
            Self::Call(_, args) => args.iter().for_each(|a| a.vars(out)),
        }
    }

    pub fn eval(&self, env: &Env<'_>) -> Result<f64, String> {
        Ok(match self {
            Self::Num(n) => *n,
            Self::Var(v) => *env.facts.get(v).ok_or_else(|| format!("unknown fact `{v}`"))?,
            Self::Neg(e) => -e.eval(env)?,
            Self::Not(e) => bool_num(e.eval(env)? == 0.0),
            Self::Bin(op, a, b) => {
                let (x, y) = (a.eval(env)?, b.eval(env)?);
                match op {
                    Op::Add => x + y,
                    Op::Sub => x - y,
                    Op::Mul => x * y,
                    Op::Div if y == 0.0 => return Err("division by zero".into()),
                    Op::Div => x / y,
                    Op::Lt => bool_num(x < y),
                    Op::Le => bool_num(x <= y),
                    Op::Gt => bool_num(x > y),
                    Op::Ge => bool_num(x >= y),
                    Op::Eq => bool_num((x - y).abs() < f64::EPSILON),
                    Op::Ne => bool_num((x - y).abs() >= f64::EPSILON),
                    Op::And => bool_num(x != 0.0 && y != 0.0),
                    Op::Or => bool_num(x != 0.0 || y != 0.0),
                }
            }
            Self::Call(f, args) => {
                let v: Vec<f64> = args.iter().map(|a| a.eval(env)).collect::<Result<_, _>>()?;
                match (f.as_str(), v.as_slice()) {
                    ("min", [a, b]) => a.min(*b),
                    ("max", [a, b]) => a.max(*b),
                    ("ceil", [a]) => a.ceil(),
                    ("floor", [a]) => a.floor(),
                    ("round_up", [a, m]) if *m > 0.0 => (a / m).ceil() * m,
                    ("round_up", _) => return Err("round_up needs a positive multiple".into()),
                    ("cur", [i]) => {
                        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                        let i = *i as usize;
                        env.current.and_then(|c| c.get(i)).copied().unwrap_or(0.0)
                    }
                    _ => return Err(format!("bad call to {f}")),
                }
            }
        })
    }
}

/// The start of an expression for an error message: short, and with control characters
/// escaped so that a message stays one line.
fn excerpt(src: &str) -> String {
    let short: String = src.chars().take(40).collect();
    let mut out = short.escape_debug().to_string();
    if src.chars().count() > 40 {
        out.push_str("...");
    }
    out
}

fn bool_num(b: bool) -> f64 {
    if b { 1.0 } else { 0.0 }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Ident(String),
    Op(&'static str),
}

fn lex(s: &str) -> Result<Vec<Tok>, String> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() || c == b'.' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.' || b[i] == b'_') {
                i += 1;
            }
            let text: String = s[start..i].chars().filter(|&c| c != '_').collect();
            let n = text
                .parse::<f64>()
                .map_err(|_| format!("bad number \"{}\"", &s[start..i]))?;
            out.push(Tok::Num(n));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Ident(s[start..i].to_string()));
        } else {
            let two = s.get(i..i + 2).unwrap_or("");
            let op: &'static str = match two {
                "<=" => "<=",
                ">=" => ">=",
                "==" => "==",
                "!=" => "!=",
                "&&" => "&&",
                "||" => "||",
                _ => match c {
                    b'+' => "+",
                    b'-' => "-",
                    b'*' => "*",
                    b'/' => "/",
                    b'<' => "<",
                    b'>' => ">",
                    b'!' => "!",
                    b'(' => "(",
                    b')' => ")",
                    b',' => ",",
                    _ => {
                        return Err(format!(
                            "unexpected character '{}'",
                            s[i..].chars().next().unwrap_or('?').escape_debug()
                        ));
                    }
                },
            };
            i += op.len();
            out.push(Tok::Op(op));
        }
    }
    Ok(out)
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
    /// Current nesting, bounded by [`MAX_DEPTH`].
    depth: usize,
}

impl Parser {
    fn peek_op(&self) -> Option<&'static str> {
        match self.toks.get(self.pos) {
            Some(Tok::Op(o)) => Some(o),
            _ => None,
        }
    }
    fn eat(&mut self, op: &str) -> bool {
        if self.peek_op() == Some(op) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn binary(&mut self, ops: &[(&str, Op)], next: fn(&mut Self) -> Result<Expr, String>) -> Result<Expr, String> {
        let mut lhs = next(self)?;
        'outer: loop {
            for (s, op) in ops {
                if self.eat(s) {
                    let rhs = next(self)?;
                    lhs = Expr::Bin(*op, Box::new(lhs), Box::new(rhs));
                    continue 'outer;
                }
            }
            return Ok(lhs);
        }
    }
    fn or(&mut self) -> Result<Expr, String> {
        self.binary(&[("||", Op::Or)], Self::and)
    }
    fn and(&mut self) -> Result<Expr, String> {
        self.binary(&[("&&", Op::And)], Self::cmp)
    }
    fn cmp(&mut self) -> Result<Expr, String> {
        self.binary(
            &[
                ("<=", Op::Le),
                (">=", Op::Ge),
                ("==", Op::Eq),
                ("!=", Op::Ne),
                ("<", Op::Lt),
                (">", Op::Gt),
            ],
            Self::sum,
        )
    }
    fn sum(&mut self) -> Result<Expr, String> {
        self.binary(&[("+", Op::Add), ("-", Op::Sub)], Self::product)
    }
    fn product(&mut self) -> Result<Expr, String> {
        self.binary(&[("*", Op::Mul), ("/", Op::Div)], Self::unary)
    }
    /// Every level of nesting (a parenthesis, a call, a unary operator) passes through here
    /// once, so this is where the depth is counted.
    fn unary(&mut self) -> Result<Expr, String> {
        if self.depth >= MAX_DEPTH {
            return Err(format!("nested deeper than {MAX_DEPTH} levels"));
        }
        self.depth += 1;
        let e = self.unary_inner();
        self.depth -= 1;
        e
    }
    fn unary_inner(&mut self) -> Result<Expr, String> {
        if self.eat("-") {
            return Ok(Expr::Neg(Box::new(self.unary()?)));
        }
        if self.eat("!") {
            return Ok(Expr::Not(Box::new(self.unary()?)));
        }
        self.atom()
    }
    fn atom(&mut self) -> Result<Expr, String> {
        let tok = self.toks.get(self.pos).cloned();
        self.pos += 1;
        match tok {
            Some(Tok::Num(n)) => Ok(Expr::Num(n)),
            Some(Tok::Ident(name)) => {
                if !self.eat("(") {
                    return Ok(Expr::Var(name));
                }
                let Some(&(_, arity)) = FUNCS.iter().find(|(f, _)| *f == name) else {
                    return Err(format!("unknown function `{name}`"));
                };
                let mut args = Vec::new();
                if !self.eat(")") {
                    loop {
                        args.push(self.or()?);
                        if self.eat(")") {
                            break;
                        }
                        if !self.eat(",") {
                            return Err(format!("expected ',' or ')' in call to {name}"));
                        }
                    }
                }
                if args.len() != arity {
                    return Err(format!("{name} takes {arity} argument(s), got {}", args.len()));
                }
                Ok(Expr::Call(name, args))
            }
            Some(Tok::Op("(")) => {
                let e = self.or()?;
                if self.eat(")") {
                    Ok(e)
                } else {
                    Err("missing ')'".into())
                }
            }
            Some(t) => Err(format!("unexpected {t:?}")),
            None => Err("unexpected end of expression".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn eval(src: &str, facts: &[(&str, f64)], cur: Option<&[f64]>) -> Result<f64, String> {
        let facts: BTreeMap<String, f64> = facts.iter().map(|(k, v)| ((*k).to_string(), *v)).collect();
        parse(src)?.eval(&Env {
            facts: &facts,
            current: cur,
        })
    }

    #[test]
    fn table() {
        let f = [("buffer", 20_643_840.0), ("rate_bps", 5e8), ("flag", 1.0)];
        let cases: &[(&str, f64)] = &[
            ("1 + 2 * 3", 7.0),
            ("(1 + 2) * 3", 9.0),
            ("-2 + 5", 3.0),
            ("max(buffer, 4096)", 20_643_840.0),
            ("min(buffer, 1_000)", 1000.0),
            ("ceil(buffer * 2304 / 2048)", 23_224_320.0),
            ("round_up(1000, 4096)", 4096.0),
            ("rate_bps >= 10e9", 0.0),
            ("rate_bps >= 1e8 && flag", 1.0),
            ("!flag || 0", 0.0),
            ("cur(2)", 6_291_456.0),
            ("cur(5)", 0.0),
            ("10 / 4", 2.5),
            ("3 != 3", 0.0),
        ];
        let cur = [4096.0, 131_072.0, 6_291_456.0];
        for (src, want) in cases {
            assert_eq!(eval(src, &f, Some(&cur)), Ok(*want), "{src}");
        }
    }

    #[test]
    fn errors() {
        for bad in [
            "1 +",
            "max(1)",
            "foo(1)",
            "(1",
            "1 $ 2",
            "1 2",
            "",
            "round_up(1, 0)",
            "1/0",
            "nofact",
        ] {
            assert!(eval(bad, &[], None).is_err(), "{bad}");
        }
    }

    #[test]
    fn nesting_and_length_are_bounded() {
        // 10,000 levels used to overflow the stack (exit 134); now one error.
        for src in [
            format!("{}1{}", "(".repeat(10_000), ")".repeat(10_000)),
            format!("{}1", "-".repeat(10_000)),
            format!("{}1", "!".repeat(10_000)),
            format!("{}1{}", "max(1,".repeat(10_000), ")".repeat(10_000)),
        ] {
            let e = parse(&src).expect_err("too deep");
            assert!(e.contains("nested deeper than 64") || e.contains("too long"), "{e}");
        }
        // A flat chain builds a deep tree too: bounded by its length.
        let chain = vec!["1"; 5000].join("+");
        assert!(parse(&chain).expect_err("too long").contains("too long"));
        // At the bound itself it still works.
        let ok = format!("{}1{}", "(".repeat(MAX_DEPTH - 1), ")".repeat(MAX_DEPTH - 1));
        assert_eq!(eval(&ok, &[], None), Ok(1.0));
        let ok = vec!["1"; MAX_TOKENS / 2].join("+");
        assert_eq!(eval(&ok, &[], None), Ok((MAX_TOKENS / 2) as f64));
    }

    #[test]
    fn errors_are_one_line_and_short() {
        let e = parse("1 \n kernel.core_pattern").expect_err("bad");
        assert!(!e.contains('\n'), "{e}");
        for src in [
            format!("1 2 {}", "x".repeat(1000)),
            format!("1{}", "x".repeat(1000)),
            format!("{}(1)", "f".repeat(1000)),
            format!("1 {}", "f".repeat(1000)),
        ] {
            let e = parse(&src).expect_err("bad");
            assert!(e.len() < 200, "{e}");
        }
        let e = parse("1 \u{1b}[2J").expect_err("bad");
        assert!(!e.contains('\u{1b}'), "{e}");
    }

    /// Expressions built from the grammar, some of them broken on purpose.
    fn expr_text() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            any::<f64>().prop_map(|f| format!("{f}")),
            (0u64..5_000_000_000).prop_map(|n| n.to_string()),
            Just("buffer".to_string()),
            Just("rate_bps".to_string()),
            Just("nofact".to_string()),
            "[a-z_]{1,6}",
            "\\PC{0,4}",
        ];
        leaf.prop_recursive(12, 96, 3, |inner| {
            let op = prop::sample::select(vec![
                "+", "-", "*", "/", "<", "<=", ">", ">=", "==", "!=", "&&", "||", ",", "",
            ]);
            let func = prop::sample::select(vec!["min", "max", "ceil", "floor", "round_up", "cur", "nope"]);
            prop_oneof![
                (inner.clone(), op, inner.clone()).prop_map(|(a, o, b)| format!("{a} {o} {b}")),
                inner.clone().prop_map(|a| format!("({a})")),
                inner.clone().prop_map(|a| format!("-{a}")),
                inner.clone().prop_map(|a| format!("!{a}")),
                (func, prop::collection::vec(inner.clone(), 0..3))
                    .prop_map(|(f, args)| format!("{f}({})", args.join(", "))),
                (0usize..200).prop_map(|n| format!("{}1{}", "(".repeat(n), ")".repeat(n))),
                inner.prop_map(|a| format!("({a}")),
            ]
        })
    }

    proptest! {
        // PROPTEST_CASES raises the case count: bench/fuzz-parser.sh runs 1,000,000.
        #[test]
        fn parse_and_eval_never_panic(
            src in expr_text(),
            junk in "\\PC{0,64}",
            bytes in proptest::collection::vec(any::<u8>(), 0..64),
            cur in proptest::collection::vec(any::<f64>(), 0..4),
        ) {
            let facts: BTreeMap<String, f64> =
                [("buffer", 20_643_840.0), ("rate_bps", 5e8)].iter().map(|(k, v)| ((*k).to_string(), *v)).collect();
            for text in [src.as_str(), junk.as_str(), &String::from_utf8_lossy(&bytes)] {
                match parse(text) {
                    Ok(e) => {
                        let mut vars = Vec::new();
                        e.vars(&mut vars);
                        let _ = e.eval(&Env { facts: &facts, current: Some(&cur) });
                        let _ = e.eval(&Env { facts: &facts, current: None });
                    }
                    Err(m) => {
                        prop_assert!(!m.contains('\n') && !m.contains('\r'), "{m:?}");
                        prop_assert!(m.chars().count() <= 165, "{m}");
                    }
                }
            }
        }
    }
}
