//! `git delegate completions SHELL` (design §3.8): print the completion script
//! generated from the clap definitions; the bash one also teaches git's own
//! bash completion `git delegate <TAB>`.

use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::CompletionsArgs;
use crate::error::Result;
use crate::ui::Ui;

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
            .replace(PLACEHOLDER, "git__delegate");
        let mut out = text.into_bytes();
        out.extend_from_slice(BASH_GIT_SHIM.as_bytes());
        return out;
    }
    generate(shell, BIN)
}

const PLACEHOLDER: &str = "GITDELEGATEBIN";

fn generate(shell: Shell, bin: &str) -> Vec<u8> {
    // The derive names the program `git delegate`; the scripts complete the
    // executable, at every level.
    let mut cmd = rename(without_hidden(crate::cli::Cli::command()), bin);
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, bin, &mut out);
    out
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
