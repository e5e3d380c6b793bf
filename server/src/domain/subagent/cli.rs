//! `cli-oneshot` sub-agents (protocol section 24.10): a profile that names an external agent CLI
//! (`bin`, `args`, `env`) runs it once per child turn, as a command of the child's thread —
//! confined by the child's sandbox mode like any command, after the parent's approval — and
//! persists a synthetic turn: the prompt, then the CLI's answer (its output, or the value at
//! `outputJsonPath` when `outputFormat` is `json`) or why it failed, with the token counts the
//! `output*TokensJsonPath` fields name. The prompt reaches the CLI as its last argument
//! (`inputMode` `arg`, or `inputArgTemplate` with `{prompt}`), on its stdin (`stdin`) or in the
//! variable `inputEnvKey` (`env`).

use std::time::Duration;

use appserver_protocol::{ItemPayload, SubAgentProfileWrite, TextPayload};
use serde_json::Value;

use crate::domain::ports::BoxFuture;
use crate::domain::shell::exec;
use crate::domain::shell::process::shell_path;
use crate::domain::turns::agent::Agent;
use crate::domain::turns::context::{TurnContext, TurnError};

/// Default `timeout` (seconds) and `maxOutputBytes`.
const DEFAULT_TIMEOUT: u64 = 600;
const DEFAULT_MAX_OUTPUT: u64 = 1024 * 1024;

/// The agent of one `cli-oneshot` child turn.
#[derive(Debug)]
pub(crate) struct CliAgent {
    pub(crate) definition: SubAgentProfileWrite,
}

/// The shell command line that runs `definition` on `prompt`.
pub(crate) fn command_line(definition: &SubAgentProfileWrite, prompt: &str) -> Result<String, String> {
    let bin = definition.bin.as_deref().map(str::trim).filter(|b| !b.is_empty()).ok_or("the profile has no `bin`")?;
    let mut words: Vec<String> = vec![bin.to_owned()];
    words.extend(definition.args.iter().flatten().cloned());
    let mut env: Vec<(String, String)> = definition.env.iter().flatten().map(|(k, v)| (k.clone(), v.clone())).collect();
    let mut stdin = None;
    match definition.input_mode.as_deref().unwrap_or("arg") {
        "arg" => match &definition.input_arg_template {
            Some(template) => words.push(template.replace("{prompt}", prompt)),
            None => words.push(prompt.to_owned()),
        },
        "stdin" => stdin = Some(prompt),
        "env" => {
            let key = definition
                .input_env_key
                .as_deref()
                .filter(|k| valid_env_key(k))
                .ok_or("`inputEnvKey` is required for inputMode env")?;
            env.push((key.to_owned(), prompt.to_owned()));
        }
        other => return Err(format!("unknown inputMode `{other}` (arg, stdin or env)")),
    }
    if let Some(bad) = env.iter().find(|(k, _)| !valid_env_key(k)) {
        return Err(format!("`{}` is not an environment variable name", bad.0));
    }
    let assignments: Vec<String> = env.iter().map(|(k, v)| format!("{k}={}", quote(v))).collect();
    let mut line = assignments.join(" ");
    if !line.is_empty() {
        line.push(' ');
    }
    line.push_str(&words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" "));
    if let Some(input) = stdin {
        line = format!("printf '%s' {} | {line}", quote(input));
    }
    Ok(line)
}

fn valid_env_key(key: &str) -> bool {
    !key.is_empty()
        && !key.starts_with(|c: char| c.is_ascii_digit())
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `text` as one shell word (single quotes, a quote inside closed and escaped).
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

impl Agent for CliAgent {
    fn run<'a>(&'a self, ctx: &'a mut TurnContext) -> BoxFuture<'a, Result<(), TurnError>> {
        Box::pin(async move {
            let prompt = crate::domain::turns::input::display_text(&ctx.input);
            let line = command_line(&self.definition, &prompt).map_err(TurnError::Agent)?;
            let service = ctx.turns().tool_env.shell.clone();
            let (recorded, configuration) = {
                let state = ctx.handle.state();
                (state.record.workspace_path.clone(), state.record.configuration.clone())
            };
            let workspace =
                service.protected.tools_workspace(&recorded, configuration.as_ref()).map_err(TurnError::Agent)?;
            let mode = service.mode_for(configuration.as_ref());
            let mode = if service.unconfined(mode) { crate::domain::policy::SandboxMode::FullAccess } else { mode };
            let shell = shell_path(None).map_err(TurnError::Agent)?;
            let spec = service.exec_spec(mode, &workspace, shell, &line);
            let timeout = Duration::from_secs(self.definition.timeout.filter(|t| *t > 0).unwrap_or(DEFAULT_TIMEOUT));
            let result =
                exec::run(&service.launcher, &spec, &workspace, timeout, |_| {}).await.map_err(TurnError::Agent)?;
            let max = self.definition.max_output_bytes.unwrap_or(DEFAULT_MAX_OUTPUT) as usize;
            let output = cut(&result.output, max);
            if result.timed_out {
                return Err(TurnError::Agent(format!(
                    "the sub-agent CLI did not finish within {} s",
                    timeout.as_secs()
                )));
            }
            if result.exit_code != Some(0) {
                let code = result.exit_code.map_or("a signal".to_owned(), |c| c.to_string());
                return Err(TurnError::Agent(format!(
                    "the sub-agent CLI failed (exit {code}): {}",
                    tail(output, 2000)
                )));
            }
            let (answer, tokens) = parse_output(&self.definition, output);
            if let Some((input, out)) = tokens {
                ctx.add_usage(input, out, None);
            }
            let item = ctx.begin(ItemPayload::AgentMessage(TextPayload::default()));
            ctx.append_text(&item, &answer);
            ctx.complete_text(&item).await?;
            Ok(())
        })
    }
}

/// The answer and (input, output) tokens in the CLI's output.
fn parse_output(definition: &SubAgentProfileWrite, output: &str) -> (String, Option<(u64, u64)>) {
    if definition.output_format.as_deref() != Some("json") {
        return (output.trim().to_owned(), None);
    }
    // The JSON document: the whole output, else its last line that is one.
    let json: Option<Value> = serde_json::from_str(output.trim()).ok().or_else(|| {
        output.lines().rev().find_map(|l| serde_json::from_str::<Value>(l.trim()).ok().filter(Value::is_object))
    });
    let Some(json) = json else { return (output.trim().to_owned(), None) };
    let at = |path: &Option<String>| path.as_deref().and_then(|p| lookup(&json, p)).cloned();
    let answer = match at(&definition.output_json_path) {
        Some(Value::String(s)) => s,
        Some(other) => other.to_string(),
        None => output.trim().to_owned(),
    };
    let count = |path: &Option<String>| at(path).and_then(|v| v.as_u64());
    let tokens =
        match (count(&definition.output_input_tokens_json_path), count(&definition.output_output_tokens_json_path)) {
            (None, None) => None,
            (input, out) => Some((input.unwrap_or(0), out.unwrap_or(0))),
        };
    (answer, tokens)
}

/// The value at a dotted path (`result`, `$.usage.input_tokens`, `items.0.text`).
fn lookup<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    let path = path.trim().trim_start_matches('$').trim_start_matches('.');
    path.split('.').filter(|p| !p.is_empty()).try_fold(value, |v, part| match part.parse::<usize>() {
        Ok(index) => v.get(index),
        Err(_) => v.get(part),
    })
}

fn cut(text: &str, max: usize) -> &str {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

fn tail(text: &str, max: usize) -> &str {
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn definition(json: Value) -> SubAgentProfileWrite {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn the_prompt_reaches_the_cli_each_way_quoted() {
        let arg = definition(serde_json::json!({ "runtime": "cli-oneshot", "bin": "agent", "args": ["exec"] }));
        assert_eq!(command_line(&arg, "it's done").unwrap(), r"'agent' 'exec' 'it'\''s done'");
        let template = definition(serde_json::json!({ "bin": "agent", "inputArgTemplate": "--prompt={prompt}" }));
        assert_eq!(command_line(&template, "x").unwrap(), "'agent' '--prompt=x'");
        let stdin = definition(serde_json::json!({ "bin": "agent", "inputMode": "stdin", "env": { "A": "1" } }));
        assert_eq!(command_line(&stdin, "$(boom)").unwrap(), r"printf '%s' '$(boom)' | A='1' 'agent'");
        let env = definition(serde_json::json!({ "bin": "agent", "inputMode": "env", "inputEnvKey": "TASK" }));
        assert_eq!(command_line(&env, "x").unwrap(), "TASK='x' 'agent'");
        let bad = definition(serde_json::json!({ "bin": "agent", "inputMode": "env", "inputEnvKey": "A B" }));
        assert!(command_line(&bad, "x").is_err());
        assert!(command_line(&definition(serde_json::json!({})), "x").is_err());
    }

    #[test]
    fn json_output_gives_the_answer_and_tokens() {
        let def = definition(serde_json::json!({ "bin": "a", "outputFormat": "json", "outputJsonPath": "$.result",
            "outputInputTokensJsonPath": "usage.input", "outputOutputTokensJsonPath": "usage.output" }));
        let output = "warming up\n{\"result\":\"the answer\",\"usage\":{\"input\":12,\"output\":3}}\n";
        assert_eq!(parse_output(&def, output), ("the answer".to_owned(), Some((12, 3))));
        let text = definition(serde_json::json!({ "bin": "a" }));
        assert_eq!(parse_output(&text, "  plain  \n"), ("plain".to_owned(), None));
    }
}
