//! The Messages-API `tool_result` block, and the mapping of a tool's output to it: empty
//! output gets a marker (an empty result makes models end their turn), text past
//! `max_result_chars` is cut to a preview and saved whole, error results are text-only.

use crate::OutcomeKind;
use crate::call::spill::SpillDir;
use crate::invoke::bindings::WitContentBlock;
use base64::Engine as _;
use serde::{Deserialize, Serialize};

/// One block of a tool_result's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// The image data.
        source: ImageSource,
    },
}

/// `{"type":"base64","media_type":…,"data":…}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageSource {
    /// Always `base64`.
    #[serde(rename = "type")]
    pub kind: String,
    /// e.g. `image/png`.
    pub media_type: String,
    /// Base64 of the bytes.
    pub data: String,
}

/// A `tool_result` block: `{"type":"tool_result","tool_use_id","content":[…],"is_error"?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolResult {
    #[serde(rename = "type")]
    kind_tag: &'static str,
    /// The id of the tool_use this answers.
    pub tool_use_id: String,
    /// What the model reads.
    pub content: Vec<ContentBlock>,
    /// True for every failure.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// How the call ended (not part of the Messages API; for events and exit codes).
    #[serde(skip)]
    pub outcome: OutcomeKind,
    /// A hook answered `continue: false`: the session should stop once this call's batch is
    /// answered (the reason). Not part of the Messages API.
    #[serde(skip)]
    pub stop: Option<String>,
}

impl ToolResult {
    /// A successful result.
    pub fn success(tool_use_id: impl Into<String>, content: Vec<ContentBlock>) -> Self {
        ToolResult {
            kind_tag: "tool_result",
            tool_use_id: tool_use_id.into(),
            content,
            is_error: false,
            outcome: OutcomeKind::Success,
            stop: None,
        }
    }

    /// An error result with one text block.
    pub fn error(tool_use_id: impl Into<String>, outcome: OutcomeKind, message: impl Into<String>) -> Self {
        ToolResult {
            kind_tag: "tool_result",
            tool_use_id: tool_use_id.into(),
            content: vec![ContentBlock::Text { text: message.into() }],
            is_error: true,
            outcome,
            stop: None,
        }
    }

    /// All text blocks joined by newlines (handy for tests and the CLI).
    pub fn text(&self) -> String {
        content_text(&self.content)
    }
}

/// The text blocks of a result's content joined by newlines (images left out): what a
/// provider that takes only text for a tool result gets, and [`ToolResult::text`].
pub fn content_text(content: &[ContentBlock]) -> String {
    content
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            ContentBlock::Image { .. } => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Media types the Messages API accepts for images.
const IMAGE_TYPES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// Characters of preview kept when a result is cut.
const PREVIEW_CHARS: usize = 2000;

/// Map a successful output. `Err` is an error message (an image of an unsupported type).
pub(crate) fn map_output(
    tool: &str,
    id: &str,
    blocks: Vec<WitContentBlock>,
    max_chars: usize,
    results_dir: &SpillDir,
) -> Result<ToolResult, String> {
    let mut content = Vec::with_capacity(blocks.len());
    for b in blocks {
        content.push(match b {
            WitContentBlock::Text(text) => ContentBlock::Text { text },
            WitContentBlock::Image(img) => {
                if !IMAGE_TYPES.contains(&img.media_type.as_str()) {
                    return Err(format!(
                        "Tool {tool} returned an image of type {:?}; supported: {}",
                        img.media_type,
                        IMAGE_TYPES.join(", ")
                    ));
                }
                ContentBlock::Image {
                    source: ImageSource {
                        kind: "base64".into(),
                        media_type: img.media_type,
                        data: base64::engine::general_purpose::STANDARD.encode(&img.data),
                    },
                }
            }
        });
    }
    let is_empty = content.iter().all(|b| matches!(b, ContentBlock::Text { text } if text.trim().is_empty()));
    if is_empty {
        return Ok(ToolResult::success(
            id,
            vec![ContentBlock::Text { text: format!("({tool} completed with no output)") }],
        ));
    }
    let chars: usize = content
        .iter()
        .map(|b| match b {
            ContentBlock::Text { text } => text.chars().count(),
            ContentBlock::Image { .. } => 0,
        })
        .sum();
    if chars > max_chars {
        content = truncate(content, chars, id, max_chars, results_dir);
    }
    Ok(ToolResult::success(id, content))
}

/// Replace the text blocks by a preview and a note saying where the whole text was saved.
fn truncate(content: Vec<ContentBlock>, chars: usize, id: &str, max_chars: usize, dir: &SpillDir) -> Vec<ContentBlock> {
    let mut text = String::new();
    let mut images = Vec::new();
    for b in content {
        match b {
            ContentBlock::Text { text: t } => {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(&t);
            }
            img @ ContentBlock::Image { .. } => images.push(img),
        }
    }
    let preview_len = PREVIEW_CHARS.min(max_chars / 2).max(1);
    let preview: String = text.chars().take(preview_len).collect();
    let saved = dir.save(id, &text);
    let note = match saved {
        Ok(path) => format!("Output too large ({chars} characters). Full output saved to: {}", path.display()),
        Err(e) => format!("Output too large ({chars} characters); the full output could not be saved ({e})."),
    };
    let mut out = vec![ContentBlock::Text {
        text: format!(
            "<persisted-output>\n{note}\n\nPreview (first {preview_len} characters):\n{preview}\n...\n</persisted-output>"
        ),
    }];
    out.extend(images);
    out
}
