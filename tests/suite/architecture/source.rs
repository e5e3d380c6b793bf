//! The server's source read for the architecture rules: every file parsed whole with syn, its
//! `crate::`, `super::` and `self::` paths (grouped imports, expressions, macro tokens) resolved to
//! the top-level module they reach, its functions' lengths in every visibility form, and its lines
//! outside test-only items.

use proc_macro2::{Span, TokenStream, TokenTree};
use std::path::{Path, PathBuf};
use syn::spanned::Spanned;
use syn::visit::{self, Visit};

/// One `.rs` file under the source root, parsed.
pub(crate) struct Source {
    /// The path relative to the root, with `/`: `turns/runner.rs`.
    pub(crate) rel: String,
    pub(crate) text: String,
    pub(crate) ast: syn::File,
    /// Its module path: `turns/runner.rs` → [turns, runner]; a file a `#[path]` attribute pulls
    /// in (`store/events.rs`'s `#[path = "event_tests.rs"] mod tests;`) → [store, events, tests].
    pub(crate) module: Vec<String>,
}

/// Every `.rs` file under `root`, sorted by path; a file that does not parse is an error naming it.
pub(crate) fn read_tree(root: &Path) -> Result<Vec<Source>, String> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    let mut files = Vec::new();
    walk(root, &mut files);
    files.sort();
    let mut sources = files
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).unwrap();
            let rel = path.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
            let ast = syn::parse_file(&text).map_err(|e| format!("{rel}: does not parse: {e}"))?;
            let module = module_path(&rel);
            Ok(Source { rel, text, ast, module })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let mut pulled = Vec::new();
    for source in &sources {
        for (file, name) in path_modules(&source.ast) {
            let dir = source.rel.rsplit_once('/').map(|(d, _)| format!("{d}/")).unwrap_or_default();
            pulled.push((format!("{dir}{file}"), [source.module.clone(), vec![name]].concat()));
        }
    }
    for (rel, module) in pulled {
        if let Some(source) = sources.iter_mut().find(|s| s.rel == rel) {
            source.module = module;
        }
    }
    Ok(sources)
}

/// `#[path = "file.rs"] mod name;` declarations: (file, name).
fn path_modules(ast: &syn::File) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for item in &ast.items {
        let syn::Item::Mod(m) = item else { continue };
        for attr in &m.attrs {
            if let syn::Meta::NameValue(nv) = &attr.meta {
                if let (true, syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Str(file), .. })) =
                    (nv.path.is_ident("path"), &nv.value)
                {
                    out.push((file.value(), m.ident.to_string()));
                }
            }
        }
    }
    out
}

/// The layers' folders: a module is named by the folder (or file) under one of them.
pub(crate) const LAYER_FOLDERS: &[&str] = &["infra", "domain", "edge", "app"];

/// The module a file belongs to: `domain/turns/runner.rs` → `turns`, `domain/ports.rs` → `ports`,
/// `domain/mod.rs` → `domain`, `lib.rs` → `lib`.
pub(crate) fn module_of(rel: &str) -> &str {
    let mut parts = rel.split('/');
    let first = parts.next().unwrap_or(rel);
    let name = match parts.next() {
        Some(second) if LAYER_FOLDERS.contains(&first) && second != "mod.rs" => second,
        _ => first,
    };
    name.strip_suffix(".rs").unwrap_or(name)
}

/// The module path of a file: `turns/runner.rs` → [turns, runner], `turns/mod.rs` → [turns],
/// `lib.rs` → [].
fn module_path(rel: &str) -> Vec<String> {
    let mut parts: Vec<String> = rel.trim_end_matches(".rs").split('/').map(str::to_owned).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// A path into the crate found in a file: its line and the module it reaches (the segment after
/// the layer's folder: `crate::domain::threads::X` reaches `threads` in `domain`; an item of the
/// crate root is named as itself, with no folder).
pub(crate) struct CrateRef {
    pub(crate) line: usize,
    pub(crate) top: String,
    pub(crate) folder: Option<String>,
    /// The whole path from the crate root, and whether it is written in test-only code.
    pub(crate) path: Vec<String>,
    pub(crate) in_test: bool,
}

/// Every path of `source` that reaches into the crate, test code included.
pub(crate) fn crate_refs(source: &Source) -> Vec<CrateRef> {
    let mut finder = RefFinder { module: source.module.clone(), refs: Vec::new(), test_depth: 0 };
    finder.visit_file(&source.ast);
    finder.refs
}

struct RefFinder {
    /// The module the visitor is in (inline `mod` blocks pushed).
    module: Vec<String>,
    refs: Vec<CrateRef>,
    /// How many test-only items the visitor is inside.
    test_depth: usize,
}

impl RefFinder {
    /// Records `segments` (a path as written, from its first segment) at `line` when it starts
    /// at `crate`, `super` or `self`.
    fn record(&mut self, segments: &[String], line: usize) {
        let Some(first) = segments.first() else { return };
        let absolute: Vec<String> = match first.as_str() {
            "crate" => segments[1..].to_vec(),
            "self" => self.module.iter().cloned().chain(segments[1..].iter().cloned()).collect(),
            "super" => {
                let ups = segments.iter().take_while(|s| *s == "super").count();
                let kept = self.module.len().saturating_sub(ups);
                self.module[..kept].iter().cloned().chain(segments[ups..].iter().cloned()).collect()
            }
            _ => return,
        };
        let (folder, top) = match absolute.as_slice() {
            [first, second, ..] if LAYER_FOLDERS.contains(&first.as_str()) => (Some(first.clone()), second.clone()),
            [first, ..] => (None, first.clone()),
            [] => return,
        };
        self.refs.push(CrateRef { line, top, folder, path: absolute, in_test: self.test_depth > 0 });
    }

    fn use_tree(&mut self, tree: &syn::UseTree, prefix: &mut Vec<String>, line: usize) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(&p.tree, prefix, line);
                prefix.pop();
            }
            syn::UseTree::Name(n) => self.leaf(prefix, n.ident.to_string(), line),
            syn::UseTree::Rename(r) => self.leaf(prefix, r.ident.to_string(), line),
            syn::UseTree::Glob(_) => self.record(prefix, line),
            syn::UseTree::Group(g) => {
                for item in &g.items {
                    self.use_tree(item, prefix, line);
                }
            }
        }
    }

    fn leaf(&mut self, prefix: &[String], name: String, line: usize) {
        let mut path = prefix.to_vec();
        if name != "self" {
            path.push(name);
        }
        self.record(&path, line);
    }

    /// `crate :: x` (and `super :: x`) inside a macro's tokens, which syn leaves unparsed.
    fn tokens(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        for (i, tree) in trees.iter().enumerate() {
            match tree {
                TokenTree::Group(g) => self.tokens(g.stream()),
                TokenTree::Ident(id) if id == "crate" || id == "super" => {
                    let mut path = vec![id.to_string()];
                    let mut j = i + 1;
                    while let (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)), Some(TokenTree::Ident(next))) =
                        (trees.get(j), trees.get(j + 1), trees.get(j + 2))
                    {
                        if a.as_char() != ':' || b.as_char() != ':' {
                            break;
                        }
                        path.push(next.to_string());
                        j += 3;
                    }
                    if path.len() > 1 {
                        self.record(&path, id.span().start().line);
                    }
                }
                _ => {}
            }
        }
    }
}

impl<'ast> Visit<'ast> for RefFinder {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let test = is_test_only(item_attrs(item));
        self.test_depth += usize::from(test);
        visit::visit_item(self, item);
        self.test_depth -= usize::from(test);
    }

    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let line = item.span().start().line;
        self.use_tree(&item.tree, &mut Vec::new(), line);
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        self.module.push(item.ident.to_string());
        visit::visit_item_mod(self, item);
        self.module.pop();
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        self.record(&segments, path.span().start().line);
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.tokens(mac.tokens.clone());
        visit::visit_macro(self, mac);
    }
}

/// Whether an item's attributes make it test-only (`#[cfg(test)]`).
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .any(|a| a.path().is_ident("cfg") && a.meta.require_list().is_ok_and(|l| l.tokens.to_string().trim() == "test"))
}

/// Lines of the file outside its test-only items.
pub(crate) fn non_test_lines(source: &Source) -> usize {
    let total = source.text.lines().count();
    let test: usize = source
        .ast
        .items
        .iter()
        .filter(|item| is_test_only(item_attrs(item)))
        .map(|item| {
            let (start, end) = lines_of(item.span());
            // The attributes sit above the item's span start.
            let attrs_start = item_attrs(item).iter().map(|a| a.span().start().line).min().unwrap_or(start);
            end - attrs_start.min(start) + 1
        })
        .sum();
    total.saturating_sub(test)
}

fn item_attrs(item: &syn::Item) -> &[syn::Attribute] {
    match item {
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        _ => &[],
    }
}

fn lines_of(span: Span) -> (usize, usize) {
    (span.start().line, span.end().line)
}

/// A function (free, in an impl or a trait, nested or not; any visibility, `const`, `async`,
/// `unsafe`, `extern`) outside test-only code.
pub(crate) struct Function {
    pub(crate) name: String,
    pub(crate) line: usize,
    pub(crate) lines: usize,
    /// The longest `match` at the top level of its body, in lines.
    pub(crate) longest_top_match: usize,
}

/// Every function of `source` outside test-only items.
pub(crate) fn functions(source: &Source) -> Vec<Function> {
    let mut finder = FnFinder { out: Vec::new() };
    for item in &source.ast.items {
        if !is_test_only(item_attrs(item)) {
            finder.visit_item(item);
        }
    }
    finder.out
}

struct FnFinder {
    out: Vec<Function>,
}

impl FnFinder {
    fn record(&mut self, name: &syn::Ident, sig: &syn::Signature, block: &syn::Block) {
        let start = sig.span().start().line;
        let end = block.span().end().line;
        let longest_top_match = block
            .stmts
            .iter()
            .filter_map(|stmt| match stmt {
                syn::Stmt::Expr(syn::Expr::Match(m), _) => Some(m.span()),
                _ => None,
            })
            .map(|span| span.end().line - span.start().line + 1)
            .max()
            .unwrap_or(0);
        self.out.push(Function { name: name.to_string(), line: start, lines: end - start + 1, longest_top_match });
    }
}

impl<'ast> Visit<'ast> for FnFinder {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.record(&f.sig.ident, &f.sig, &f.block);
        visit::visit_item_fn(self, f);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.record(&f.sig.ident, &f.sig, &f.block);
        visit::visit_impl_item_fn(self, f);
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(block) = &f.default {
            self.record(&f.sig.ident, &f.sig, block);
        }
        visit::visit_trait_item_fn(self, f);
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_test_only(&m.attrs) {
            visit::visit_item_mod(self, m);
        }
    }
}

/// File names a file's `//!` lines mention (`apps/mod.rs`, `docs/architecture.md`), with their
/// line: words ending in `.rs` or `.sql`, or a path ending in `.md` (`SKILL.md` alone is the name
/// of a user's file, not one of ours), made of path characters.
pub(crate) fn named_files(source: &Source) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (n, line) in source.text.lines().enumerate() {
        let Some(doc) = line.trim_start().strip_prefix("//!") else { continue };
        for word in doc.split(|c: char| c.is_whitespace() || "`()[],;:'\"".contains(c)) {
            let word = word.trim_end_matches('.');
            let path_like = word.chars().all(|c| c.is_alphanumeric() || "_/.-".contains(c));
            let named = [".rs", ".sql"].iter().any(|ext| word.ends_with(ext) && word.len() > ext.len())
                || (word.ends_with(".md") && word.contains('/'));
            if path_like && named && !word.starts_with('.') {
                out.push((n + 1, word.to_owned()));
            }
        }
    }
    out
}

/// Lines of `source`'s non-test code holding a JSON-RPC error code as a number (`-32000` to
/// `-32768`, in expressions or macro tokens such as `json!`).
pub(crate) fn error_code_literals(source: &Source) -> Vec<usize> {
    let mut finder = CodeFinder { lines: Vec::new() };
    for item in &source.ast.items {
        if !is_test_only(item_attrs(item)) {
            finder.visit_item(item);
        }
    }
    finder.lines
}

struct CodeFinder {
    lines: Vec<usize>,
}

fn is_error_code(digits: &str) -> bool {
    digits.parse::<i64>().is_ok_and(|n| (32000..=32768).contains(&n))
}

impl CodeFinder {
    fn tokens(&mut self, tokens: TokenStream) {
        let trees: Vec<TokenTree> = tokens.into_iter().collect();
        for (i, tree) in trees.iter().enumerate() {
            match (tree, trees.get(i + 1)) {
                (TokenTree::Group(g), _) => self.tokens(g.stream()),
                (TokenTree::Punct(p), Some(TokenTree::Literal(lit)))
                    if p.as_char() == '-' && is_error_code(&lit.to_string()) =>
                {
                    self.lines.push(lit.span().start().line);
                }
                _ => {}
            }
        }
    }
}

impl<'ast> Visit<'ast> for CodeFinder {
    fn visit_expr_unary(&mut self, e: &'ast syn::ExprUnary) {
        if let (syn::UnOp::Neg(_), syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(n), .. })) = (&e.op, &*e.expr) {
            if is_error_code(n.base10_digits()) {
                self.lines.push(n.span().start().line);
            }
        }
        visit::visit_expr_unary(self, e);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.tokens(mac.tokens.clone());
        visit::visit_macro(self, mac);
    }

    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_test_only(&m.attrs) {
            visit::visit_item_mod(self, m);
        }
    }
}

/// Lines of `source` where the keyword `unsafe` (a block, a function, an impl, a trait, an extern
/// block, in macro tokens too) is not right below a comment that says why it is sound: a `//
/// SAFETY:` comment, or for an unsafe function a `# Safety` section of its doc, in the run of
/// comment and attribute lines just above the keyword's line. A function pointer's type (`unsafe
/// fn(…)`, `unsafe extern "C" fn(…)`) is no unsafe code and needs none.
pub(crate) fn unsafe_without_safety_comment(source: &Source) -> Vec<usize> {
    let tokens: TokenStream = source.text.parse().unwrap_or_default();
    let lines: Vec<&str> = source.text.lines().collect();
    let mut found = Vec::new();
    unsafe_keywords(tokens, &mut found);
    found.retain(|&line| !has_safety_comment(&lines, line));
    found.dedup();
    found
}

fn unsafe_keywords(tokens: TokenStream, found: &mut Vec<usize>) {
    let trees: Vec<TokenTree> = tokens.into_iter().collect();
    for (i, tree) in trees.iter().enumerate() {
        match tree {
            TokenTree::Group(g) => unsafe_keywords(g.stream(), found),
            TokenTree::Ident(id) if id == "unsafe" && !is_fn_pointer_type(&trees[i + 1..]) => {
                found.push(id.span().start().line)
            }
            _ => {}
        }
    }
}

/// Whether the tokens after `unsafe` are the rest of a function pointer's type: `fn (…)` or
/// `extern "ABI" fn (…)`.
fn is_fn_pointer_type(rest: &[TokenTree]) -> bool {
    let mut rest = rest.iter().peekable();
    if matches!(rest.peek(), Some(TokenTree::Ident(id)) if id == "extern") {
        rest.next();
        if matches!(rest.peek(), Some(TokenTree::Literal(_))) {
            rest.next();
        }
    }
    matches!(rest.next(), Some(TokenTree::Ident(id)) if id == "fn")
        && matches!(rest.next(), Some(TokenTree::Group(g)) if g.delimiter() == proc_macro2::Delimiter::Parenthesis)
}

/// Whether the comment and attribute lines right above line `line` (1-based) hold `SAFETY:` or
/// `# Safety`.
fn has_safety_comment(lines: &[&str], line: usize) -> bool {
    lines[..line.saturating_sub(1).min(lines.len())]
        .iter()
        .rev()
        .map(|above| above.trim_start())
        .take_while(|above| above.starts_with("//") || above.starts_with("#[") || above.starts_with("#!["))
        .any(|above| above.contains("SAFETY:") || above.contains("# Safety"))
}
