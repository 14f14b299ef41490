//! Files a run writes, checked against each other and against the files it reads before it
//! starts: two writers on one file tear each other's lines, and a writer on an input's file
//! destroys what is being read.

use std::path::{Path, PathBuf};

/// What a path is, for comparing: standard input or output, or a file by its canonical path
/// (the file's own when it exists, symbolic links resolved; else its directory's, with its name).
#[derive(Debug, PartialEq, Eq)]
enum Place {
    /// `-`.
    Standard,
    /// A file.
    File(PathBuf),
}

fn place(path: &Path) -> Place {
    if path.as_os_str() == "-" {
        return Place::Standard;
    }
    if let Ok(canonical) = std::fs::canonicalize(path) {
        return Place::File(canonical);
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match (std::fs::canonicalize(parent), path.file_name()) {
        (Ok(dir), Some(name)) => Place::File(dir.join(name)),
        _ => Place::File(path.to_owned()),
    }
}

/// Refuses a run whose writers collide: two of `writes` on one file (or both on standard
/// output), or one of them on a file one of `reads` names (a pattern's matches included).
/// Each is `(what it is, its path)`, the what as the user would name it (`output \`alerts\``).
pub(super) fn check_collisions(
    reads: &[(String, &Path)],
    writes: &[(String, &Path)],
) -> Result<(), String> {
    let writes: Vec<(&String, Place)> = writes.iter().map(|(w, p)| (w, place(p))).collect();
    for (i, (what, at)) in writes.iter().enumerate() {
        if let Some((other, _)) = writes[..i].iter().find(|(_, p)| p == at) {
            let file = match at {
                Place::Standard => "standard output".to_owned(),
                Place::File(f) => format!("`{}`", f.display()),
            };
            return Err(format!(
                "{other} and {what} both write {file}: their lines would tear each other; give each its own file"
            ));
        }
        let Place::File(file) = at else { continue };
        for (input, path) in reads {
            if path.as_os_str() == "-" {
                continue;
            }
            // (A pattern is not a file: its directory is made canonical, and its name kept.)
            let Place::File(pattern) = place(path) else {
                continue;
            };
            if punctual_adapters::replay::names_file(&pattern, file) {
                return Err(format!(
                    "{what} writes `{}`, which {input} reads: writing it would destroy the input; give the output another file",
                    file.display()
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writers_on_one_file_or_on_an_input_are_refused() {
        let dir = std::env::temp_dir().join(format!("punctual-paths-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        std::fs::write(dir.join("in.csv"), "t\n").expect("written");
        let input = dir.join("in.csv");
        let reads = [("input `r`".to_owned(), input.as_path())];
        let out = dir.join("out.jsonl");
        let same = dir.join(".").join("out.jsonl");
        let other = dir.join("other.jsonl");
        let ok = check_collisions(
            &reads,
            &[("output `a`".into(), &out), ("output `b`".into(), &other)],
        );
        assert_eq!(ok, Ok(()));
        let both = check_collisions(
            &reads,
            &[("output `a`".into(), &out), ("output `b`".into(), &same)],
        );
        assert!(both.is_err_and(|e| e.starts_with("output `a` and output `b` both write")));
        let over = check_collisions(&reads, &[("dead letters".into(), &input)]);
        assert!(over.is_err_and(|e| e.contains("which input `r` reads")));
        let pattern = dir.join("*.csv");
        let globbed = [("input `r`".to_owned(), pattern.as_path())];
        let new_csv = dir.join("new.csv");
        let over = check_collisions(&globbed, &[("output `a`".into(), &new_csv)]);
        assert!(over.is_err_and(|e| e.contains("which input `r` reads")));
        let stdout = Path::new("-");
        let twice = check_collisions(
            &reads,
            &[("output `a`".into(), stdout), ("output `b`".into(), stdout)],
        );
        assert!(twice.is_err_and(|e| e.contains("both write standard output")));
    }
}
