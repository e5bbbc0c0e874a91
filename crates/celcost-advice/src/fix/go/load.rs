//! Loading: the Go packages under the `--go` directories and those of their modules that they
//! import, parsed.

use std::path::{Path, PathBuf};

use super::{GoPackages, MAX_FILES, Package, module_of, syntax};

impl GoPackages {
    /// Reads the packages under `dirs` (recursively; `_test.go` files, `vendor` and `testdata`
    /// left out) and the packages of their modules that they import.
    pub fn load(dirs: &[PathBuf]) -> Result<GoPackages, String> {
        let mut g = GoPackages::default();
        let mut modules: Vec<(PathBuf, String)> = Vec::new();
        let mut todo: Vec<PathBuf> = Vec::new();
        for d in dirs {
            if !d.is_dir() {
                return Err(format!("--go {}: not a directory", d.display()));
            }
            if let Some(m) = module_of(d)
                && !modules.contains(&m)
            {
                modules.push(m);
            }
            let mut stack = vec![d.clone()];
            while let Some(dir) = stack.pop() {
                todo.push(dir.clone());
                let Ok(rd) = std::fs::read_dir(&dir) else {
                    continue;
                };
                let mut subs: Vec<PathBuf> = rd
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| {
                        p.is_dir()
                            && !matches!(
                                p.file_name().and_then(|n| n.to_str()),
                                Some("vendor" | "testdata" | ".git")
                            )
                    })
                    .collect();
                subs.sort();
                stack.extend(subs.into_iter().rev());
            }
        }
        let mut files_read = 0usize;
        let mut seen: std::collections::HashSet<PathBuf> = Default::default();
        // The directories given first (so that files are named as given), then the imports.
        let mut todo: std::collections::VecDeque<PathBuf> = todo.into();
        while let Some(dir) = todo.pop_front() {
            let Ok(canon) = std::fs::canonicalize(&dir) else {
                continue;
            };
            if !seen.insert(canon.clone()) {
                continue;
            }
            let Some(idx) = g.read_package(&dir, &canon, &modules, &mut files_read)? else {
                continue;
            };
            // The module's packages it imports, read too.
            let imports: Vec<String> = g.packages[idx]
                .files
                .iter()
                .flat_map(|(_, _, f)| f.imports.iter().map(|(_, p)| p.clone()))
                .collect();
            for imp in imports {
                for (root, module) in &modules {
                    if let Some(rest) = imp.strip_prefix(module.as_str())
                        && (rest.is_empty() || rest.starts_with('/'))
                    {
                        let d = root.join(rest.trim_start_matches('/'));
                        if d.is_dir() {
                            todo.push_back(d);
                        }
                    }
                }
            }
        }
        Ok(g)
    }

    pub(super) fn read_package(
        &mut self,
        dir: &Path,
        canon: &Path,
        modules: &[(PathBuf, String)],
        files_read: &mut usize,
    ) -> Result<Option<usize>, String> {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return Ok(None);
        };
        let mut paths: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.is_file()
                    && p.extension().is_some_and(|e| e == "go")
                    && !p
                        .file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.ends_with("_test.go"))
            })
            .collect();
        if paths.is_empty() {
            return Ok(None);
        }
        paths.sort();
        let mut files = Vec::new();
        for p in paths {
            *files_read += 1;
            if *files_read > MAX_FILES {
                return Err(format!(
                    "--go: more than {MAX_FILES} Go files; name the API packages' directories"
                ));
            }
            let src = std::fs::read_to_string(&p)
                .map_err(|e| format!("{}: cannot read: {e}", p.display()))?;
            // Files excluded from every build (`//go:build ignore`) are not the package's.
            if src
                .lines()
                .take_while(|l| !l.starts_with("package "))
                .any(|l| l.trim() == "//go:build ignore" || l.trim() == "// +build ignore")
            {
                continue;
            }
            let f = syntax::parse(&src).map_err(|e| format!("{}: {e}", p.display()))?;
            files.push((p, src, f));
        }
        let Some(name) = files
            .iter()
            .map(|(_, _, f)| f.package.clone())
            .find(|n| !n.is_empty())
        else {
            return Ok(None);
        };
        files.retain(|(_, _, f)| f.package == name);
        let mut group = None;
        let mut version = None;
        for (_, src, f) in &files {
            for (n, v) in f.all_markers(src) {
                match n.as_str() {
                    "groupName" if group.is_none() => group = Some(v),
                    "versionName" if version.is_none() => version = Some(v),
                    _ => {}
                }
            }
        }
        let import_path = modules.iter().find_map(|(root, module)| {
            let rel = canon.strip_prefix(root).ok()?;
            let rel = rel.to_string_lossy().replace('\\', "/");
            Some(if rel.is_empty() {
                module.clone()
            } else {
                format!("{module}/{rel}")
            })
        });
        let idx = self.packages.len();
        if let Some(p) = &import_path {
            self.by_path.insert(p.clone(), idx);
        }
        self.packages.push(Package {
            import_path,
            version: version.unwrap_or_else(|| name.clone()),
            name,
            files,
            group,
        });
        Ok(Some(idx))
    }
}
