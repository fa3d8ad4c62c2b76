//! `git delegate completions SHELL` (design §3.8): print the completion script
//! generated from the clap definitions; the bash one also teaches git's own
//! bash completion `git delegate <TAB>`. The bash, zsh and fish scripts ask
//! `git-delegate __complete` (`complete.rs`) for open batches and task
//! names, and offer no file names for values that are none (`--ttl`, ...).

use clap::{CommandFactory, ValueHint};
use clap_complete::Shell;

use super::complete::{values_of, Values};
use crate::cli::CompletionsArgs;
use crate::ui::Ui;
use git_delegate::error::Result;

/// The name the scripts complete (and git runs): `git-delegate`.
const BIN: &str = "git-delegate";

/// The completion script of `shell`, deterministic.
pub fn script(shell: Shell) -> Vec<u8> {
    if shell == Shell::Bash {
        // clap_complete's bash generator names the root function after the
        // binary with `-` turned into `__` but its subcommands with `-` turned
        // into `__subcmd__`, so a dashed name never completes past the
        // subcommand. Generate with a dash-free placeholder and put the real
        // names in: `git__delegate` for functions, `git-delegate` for the
        // command that `complete` registers.
        let text = String::from_utf8_lossy(&generate(shell, PLACEHOLDER)).into_owned();
        let text = text
            .replace(
                &format!("-o default {PLACEHOLDER}\n"),
                &format!("-o default {BIN}\n"),
            )
            .replace(PLACEHOLDER, "git__delegate")
            // The generated function becomes the fallback of the dynamic one.
            .replace("\n_git__delegate() {\n", "\n_git__delegate__static() {\n");
        let text = match text.strip_prefix("_git__delegate() {\n") {
            Some(rest) => format!("_git__delegate__static() {{\n{rest}"),
            None => text,
        };
        let mut out = BASH_DYNAMIC.as_bytes().to_vec();
        out.extend_from_slice(text.as_bytes());
        out.extend_from_slice(BASH_GIT_SHIM.as_bytes());
        return out;
    }
    let text = String::from_utf8_lossy(&generate(shell, BIN)).into_owned();
    match shell {
        Shell::Zsh => {
            let text = text.replace(":_hosts'", ":_git-delegate__dynamic'");
            let tail = "\nif [ \"$funcstack[1]\" = \"_git-delegate\" ]; then";
            match text.split_once(tail) {
                Some((head, rest)) => format!("{head}{ZSH_DYNAMIC}{tail}{rest}").into_bytes(),
                None => text.into_bytes(),
            }
        }
        Shell::Fish => {
            let text = text.replace("(__fish_print_hostnames)", "(__fish_git_delegate_dynamic)");
            format!("{text}{FISH_DYNAMIC}").into_bytes()
        }
        _ => text.into_bytes(),
    }
}

/// bash: the completion function registered for `git-delegate` (and run by
/// `_git_delegate` below for `git delegate`): `__complete` answers where it
/// knows the values (exit 0: those candidates and no file names), else the
/// clap-generated completion runs.
const BASH_DYNAMIC: &str = r#"# Open batches, task names, and no file names for values that are none:
# asked of git-delegate itself (`__complete` exits 1 where the static
# completion, _git__delegate__static, applies).
_git__delegate() {
    local __gd_out __gd_c
    if [ -n "${__gd_via_git-}" ] && declare -F __git >/dev/null 2>&1; then
        # Through git's completion: with its -C and --git-dir.
        __gd_out="$(__git delegate __complete -- "${COMP_WORDS[@]:1:COMP_CWORD}")"
    else
        __gd_out="$("$1" __complete -- "${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null)"
    fi
    if [ $? -eq 0 ]; then
        compopt +o default +o bashdefault 2>/dev/null
        COMPREPLY=()
        if [ -n "$__gd_out" ]; then
            while IFS= read -r __gd_c; do
                printf -v __gd_c '%q' "$__gd_c"
                COMPREPLY+=("$__gd_c")
            done <<< "$__gd_out"
        fi
        return 0
    fi
    _git__delegate__static "$@"
}

"#;

/// zsh: the action of the arguments `__complete` knows the values of.
const ZSH_DYNAMIC: &str = r#"
# Open batches and task names, asked of git-delegate itself, with the words
# of the line after the program (`words` may hold only some of them here).
(( $+functions[_git-delegate__dynamic] )) ||
_git-delegate__dynamic() {
    local -a __gd_words candidates
    __gd_words=(${(z)LBUFFER})
    [[ -z $LBUFFER || $LBUFFER == *[[:space:]] ]] && __gd_words+=("")
    local i=${__gd_words[(i)(git-delegate|*/git-delegate|delegate)]}
    candidates=(${(f)"$(git-delegate __complete -- "${(@)__gd_words[i+1,-1]}" 2>/dev/null)"})
    compadd -a candidates
}
"#;

/// fish: the function the options' entries call, and, as positional
/// arguments are not generated, one entry for every place `__complete`
/// knows the values of (no file names there).
const FISH_DYNAMIC: &str = r#"
# Open batches and task names, asked of git-delegate itself (it exits 1
# where the entries above apply).
function __fish_git_delegate_dynamic
	set -l words (commandline -opc)
	set -e words[1]
	set -l cur (commandline -ct)
	set -q cur[1]; or set cur ""
	git-delegate __complete -- $words $cur 2>/dev/null
end
complete -c git-delegate -n "__fish_git_delegate_dynamic >/dev/null" -f -a "(__fish_git_delegate_dynamic)"
"#;

const PLACEHOLDER: &str = "GITDELEGATEBIN";

fn generate(shell: Shell, bin: &str) -> Vec<u8> {
    // The derive names the program `git delegate`; the scripts complete the
    // executable, at every level.
    let mut cmd = rename(without_hidden(crate::cli::Cli::command()), bin);
    if matches!(shell, Shell::Zsh | Shell::Fish) {
        cmd = mark(cmd);
    }
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, bin, &mut out);
    out
}

/// Mark the arguments `__complete` knows the values of, for the zsh and
/// fish generators: no completion (`ValueHint::Other`: no file names) for
/// values that are none, and for batches and tasks a hint no argument
/// otherwise has (`Hostname`), whose action is then replaced by ours
/// (fish, which generates no positional arguments, also gets one entry of
/// its own for those).
fn mark(cmd: clap::Command) -> clap::Command {
    cmd.mut_subcommands(|sub| {
        let name = sub.get_name().to_string();
        let positionals: Vec<String> = sub
            .get_positionals()
            .map(|a| a.get_id().to_string())
            .collect();
        let marks: Vec<(String, Values)> = sub
            .get_arguments()
            .filter_map(|a| {
                values_of(&name, a.get_id().as_str()).map(|v| (a.get_id().to_string(), v))
            })
            .collect();
        let sub = marks.into_iter().fold(sub, |sub, (id, v)| {
            let hint = match v {
                Values::Nothing => ValueHint::Other,
                Values::Batch | Values::Task | Values::Kept | Values::Undoable | Values::Undone => {
                    ValueHint::Hostname
                }
            };
            sub.mut_arg(id, |a| a.value_hint(hint))
        });
        // `mut_arg` moves an argument to the end, and positionals are
        // numbered in order: move them all, in their order.
        positionals
            .iter()
            .fold(sub, |sub, id| sub.mut_arg(id.as_str(), |a| a))
    })
}

/// The command without its hidden subcommands (the `snapshot` plumbing):
/// clap_complete offers hidden subcommands too.
fn without_hidden(full: clap::Command) -> clap::Command {
    let mut cmd = clap::Command::new("git-delegate")
        .about(full.get_about().cloned().unwrap_or_default())
        .version(env!("CARGO_PKG_VERSION"))
        .propagate_version(true)
        .subcommand_required(full.is_subcommand_required_set())
        .args(full.get_arguments().cloned());
    for sub in full.get_subcommands().filter(|s| !s.is_hide_set()) {
        cmd = cmd.subcommand(sub.clone());
    }
    cmd
}

fn rename(cmd: clap::Command, bin: &str) -> clap::Command {
    cmd.bin_name(bin.to_string()).mut_subcommands(|sub| {
        let name = format!("{bin} {}", sub.get_name());
        rename(sub, &name)
    })
}

/// git's bash completion (git-completion.bash) completes `git delegate ...`
/// by calling `_git_delegate` with its own `words`, `cword`, `cur` and
/// `__git_cmd_idx` (the index of `delegate`, or of an alias, in `words`),
/// and it registers `git` with `-o nospace`, so every finished word needs
/// its own space. The shim rebuilds the command line as
/// `git-delegate ARGS...` (an alias such as `fan = delegate prepare -n 4`
/// expanded) and runs the clap-generated function on it.
const BASH_GIT_SHIM: &str = r#"
# `git delegate <TAB>` (and aliases of `delegate ...`): git's own bash
# completion calls _git_delegate with its words, cword and __git_cmd_idx.
_git_delegate() {
    local __gd_idx=${__git_cmd_idx:-1}
    local -a __gd_pre=()
    local __gd_cmd="${COMP_WORDS[__gd_idx]-}"
    if [ -n "$__gd_cmd" ] && [ "$__gd_cmd" != "delegate" ]; then
        local __gd_alias
        if declare -F __git >/dev/null 2>&1; then
            __gd_alias="$(__git config --get "alias.$__gd_cmd" 2>/dev/null)"
        else
            __gd_alias="$(git config --get "alias.$__gd_cmd" 2>/dev/null)"
        fi
        case "$__gd_alias" in
        delegate|delegate\ *) read -ra __gd_pre <<< "${__gd_alias#delegate}" ;;
        esac
    fi
    local -a COMP_WORDS=("git-delegate" "${__gd_pre[@]}" "${words[@]:__gd_idx+1}")
    local COMP_CWORD=$((cword - __gd_idx + ${#__gd_pre[@]}))
    local __gd_cur="${COMP_WORDS[COMP_CWORD]-}"
    local __gd_prev="${COMP_WORDS[COMP_CWORD-1]-}"
    # git keeps `--opt=value` as one word: complete the value after the `=`
    # (readline replaces only what follows the `=`).
    case "$__gd_cur" in
    --*=*)
        __gd_prev="${__gd_cur%%=*}"
        __gd_cur="${__gd_cur#*=}"
        COMP_WORDS=("${COMP_WORDS[@]:0:COMP_CWORD}" "$__gd_prev" "$__gd_cur")
        COMP_CWORD=$((COMP_CWORD + 1))
        ;;
    esac
    local COMP_LINE="${COMP_WORDS[*]}"
    local COMP_POINT=${#COMP_LINE}
    COMPREPLY=()
    local __gd_via_git=1
    _git__delegate "git-delegate" "$__gd_cur" "$__gd_prev"
    local i
    for i in "${!COMPREPLY[@]}"; do
        case "${COMPREPLY[i]}" in
        *=|*/) ;;
        *) COMPREPLY[i]="${COMPREPLY[i]} " ;;
        esac
    done
}
"#;

pub fn run(_ui: &Ui, args: CompletionsArgs) -> Result<i32> {
    crate::ui::stdout_bytes(&script(args.shell));
    Ok(0)
}
