//! The rules for every user-supplied name and title: text that other users see, so text that
//! must not be able to hide, reorder or fake what it shows.
//!
//! [`clean`] normalizes to Unicode NFC (what is stored and counted), trims white space at both
//! ends as the fields always did, then refuses, naming the rule and the code point:
//!
//! - control characters (Cc) and format characters (Cf): bidi embeddings, overrides and
//!   isolates (U+202A–202E, U+2066–2069), the marks LRM, RLM and ALM, zero-width space,
//!   non-joiner and joiner (U+200B–200D), word joiner and invisible operators (U+2060–2064),
//!   the BOM (U+FEFF), the soft hyphen, tag characters (U+E0000–E007F). Two exceptions, both
//!   parts of emoji that people put in their names: a ZERO WIDTH JOINER between two emoji
//!   (👩‍💻, 🏳️‍🌈), and the tag characters of the three flags that are spelled with tags
//!   (England, Scotland, Wales: 🏴 + tags + CANCEL TAG);
//! - private-use (Co) and unassigned (Cn) code points (surrogates cannot occur in a Rust
//!   string);
//! - separators other than the ordinary space U+0020: no-break and ideographic spaces and the
//!   other Zs, the line and paragraph separators (Zl, Zp);
//! - fillers, characters that are letters, marks or symbols but render as nothing: the
//!   Default_Ignorable_Code_Point characters that are not already Cf or Cn (Hangul fillers
//!   U+115F, U+1160, U+3164, U+FFA0, the combining grapheme joiner U+034F, the Khmer inherent
//!   vowels U+17B4–17B5), and the blank U+2800 BRAILLE PATTERN BLANK and U+16FE4 KHITAN SMALL
//!   SCRIPT FILLER;
//! - a variation selector (U+FE00–FE0F, U+E0100–E01EF, the Mongolian U+180B–180D, U+180F)
//!   that does not directly follow the letter or symbol it modifies, or a second one on it;
//! - a combining mark (Mn, Mc, Me) that follows no letter or symbol (at the start, after a
//!   space), and more than [`MAX_COMBINING_MARKS`] marks in a row on one character ("zalgo").
//!
//! A name thus always holds a visible character: white space is trimmed, every invisible
//! character is refused, and a mark needs a base. Letters of every script (accents, CJK,
//! Arabic and Hebrew: right-to-left letters are fine, only the bidi controls are not), emoji
//! with skin tones, ZWJ sequences and flags pass.
//!
//! The tables come from `unicode-normalization` and `unicode-properties` (Unicode 18.0).

use unicode_normalization::UnicodeNormalization;
use unicode_properties::{GeneralCategory, UnicodeEmoji, UnicodeGeneralCategory};

/// The most combining marks one character may carry: enough for any script's names after NFC
/// (Vietnamese stacks two, pointed Hebrew three, a keycap emoji two), not for "zalgo" text.
pub const MAX_COMBINING_MARKS: usize = 3;

const ZWJ: char = '\u{200D}';
const BLACK_FLAG: char = '\u{1F3F4}';
const CANCEL_TAG: char = '\u{E007F}';

/// The flags spelled with tag characters that emoji keyboards offer (RGI, Unicode's
/// emoji-sequences.txt): England, Scotland, Wales.
const TAG_FLAGS: [&str; 3] = ["gbeng", "gbsct", "gbwls"];

/// Which rule a character broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule {
    Control,
    Format,
    /// A ZERO WIDTH JOINER that does not join two emoji.
    Joiner,
    PrivateUse,
    Unassigned,
    Separator,
    Filler,
    VariationSelector,
    MarkWithoutBase,
    TooManyMarks,
}

impl Rule {
    fn describe(self) -> String {
        match self {
            Self::Control => "a control character".to_owned(),
            Self::Format => {
                "an invisible format character (bidi control, zero-width character, tag...)"
                    .to_owned()
            }
            Self::Joiner => "a zero width joiner outside an emoji sequence".to_owned(),
            Self::PrivateUse => "a private-use character".to_owned(),
            Self::Unassigned => "an unassigned code point".to_owned(),
            Self::Separator => "a separator other than the ordinary space U+0020".to_owned(),
            Self::Filler => "a filler character that renders as nothing".to_owned(),
            Self::VariationSelector => {
                "a variation selector that follows no character it can modify".to_owned()
            }
            Self::MarkWithoutBase => "a combining mark that follows no letter or symbol".to_owned(),
            Self::TooManyMarks => {
                format!("more than {MAX_COMBINING_MARKS} combining marks on one character")
            }
        }
    }
}

/// Why a text was refused; the message names the field, the rule and the code point.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TextError {
    #[error("{field} must be 1 to {max} characters (counted after Unicode NFC normalization)")]
    Length { field: &'static str, max: usize },
    #[error(
        "{field} must not contain U+{code:04X}: {reason}",
        code = u32::from(*ch),
        reason = rule.describe()
    )]
    Refused {
        field: &'static str,
        ch: char,
        rule: Rule,
    },
}

impl TextError {
    /// The rule broken, `None` for the length.
    pub fn rule(&self) -> Option<Rule> {
        match self {
            Self::Length { .. } => None,
            Self::Refused { rule, .. } => Some(*rule),
        }
    }
}

/// `raw` in NFC and trimmed, if it is 1 to `max_chars` characters (Unicode scalar values,
/// counted after normalization) and breaks none of the rules above; `field` names it in the
/// error.
pub fn clean(field: &'static str, raw: &str, max_chars: usize) -> Result<String, TextError> {
    let normalized: String = raw.nfc().collect();
    let text = normalized.trim();
    let length = text.chars().count();
    if length == 0 || length > max_chars {
        return Err(TextError::Length {
            field,
            max: max_chars,
        });
    }
    let chars: Vec<char> = text.chars().collect();
    check(&chars).map_err(|(ch, rule)| TextError::Refused { field, ch, rule })?;
    Ok(text.to_owned())
}

/// What came just before the character being checked.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Before {
    /// The start of the text, or a space.
    Nothing,
    /// A letter, number, punctuation or symbol, with `marks` combining marks and maybe a
    /// variation selector since.
    Base { marks: usize, selector: bool },
}

fn check(chars: &[char]) -> Result<(), (char, Rule)> {
    let mut before = Before::Nothing;
    let mut i = 0;
    while i < chars.len() {
        let ch = chars[i];
        if ch == ZWJ {
            if !joins_emoji(chars, i) {
                return Err((ch, Rule::Joiner));
            }
            before = Before::Nothing;
            i += 1;
            continue;
        }
        if is_tag(ch) {
            match tag_flag_len(chars, i) {
                Some(len) => {
                    i += len;
                    continue;
                }
                None => return Err((ch, Rule::Format)),
            }
        }
        if is_variation_selector(ch) {
            match before {
                Before::Base {
                    marks: 0,
                    selector: false,
                } => {
                    before = Before::Base {
                        marks: 0,
                        selector: true,
                    }
                }
                _ => return Err((ch, Rule::VariationSelector)),
            }
            i += 1;
            continue;
        }
        if is_filler(ch) {
            return Err((ch, Rule::Filler));
        }
        use GeneralCategory as G;
        match ch.general_category() {
            G::Control => return Err((ch, Rule::Control)),
            G::Format => return Err((ch, Rule::Format)),
            G::PrivateUse => return Err((ch, Rule::PrivateUse)),
            G::Unassigned => return Err((ch, Rule::Unassigned)),
            G::SpaceSeparator if ch == ' ' => before = Before::Nothing,
            G::SpaceSeparator | G::LineSeparator | G::ParagraphSeparator => {
                return Err((ch, Rule::Separator));
            }
            G::NonspacingMark | G::SpacingMark | G::EnclosingMark => match before {
                Before::Nothing => return Err((ch, Rule::MarkWithoutBase)),
                Before::Base { marks, .. } if marks >= MAX_COMBINING_MARKS => {
                    return Err((ch, Rule::TooManyMarks));
                }
                Before::Base { marks, selector } => {
                    before = Before::Base {
                        marks: marks + 1,
                        selector,
                    }
                }
            },
            _ => {
                before = Before::Base {
                    marks: 0,
                    selector: false,
                }
            }
        }
        i += 1;
    }
    Ok(())
}

/// An emoji that can take part in a ZWJ sequence: Emoji=Yes, but not the ASCII digits, `#`
/// and `*` (Emoji=Yes only as keycap bases), so that a joiner between two digits is refused.
fn is_pictographic(ch: char) -> bool {
    !ch.is_ascii() && ch.is_emoji_char()
}

/// Whether the joiner at `at` sits between two emoji: after an emoji (with its skin tone,
/// which is itself an emoji, or its VS16) and before one.
fn joins_emoji(chars: &[char], at: usize) -> bool {
    let previous = match at.checked_sub(1).map(|j| chars[j]) {
        Some('\u{FE0F}') => at.checked_sub(2).map(|j| chars[j]),
        other => other,
    };
    let next = chars.get(at + 1).copied();
    previous.is_some_and(is_pictographic) && next.is_some_and(is_pictographic)
}

fn is_tag(ch: char) -> bool {
    ('\u{E0000}'..='\u{E007F}').contains(&ch)
}

/// The length of the tag sequence at `at` if it completes one of [`TAG_FLAGS`] after a black
/// flag.
fn tag_flag_len(chars: &[char], at: usize) -> Option<usize> {
    if at == 0 || chars[at - 1] != BLACK_FLAG {
        return None;
    }
    let end = at + chars[at..].iter().position(|&ch| ch == CANCEL_TAG)?;
    // Tag letters are ASCII shifted to U+E0000.
    let spelled: Option<String> = chars[at..end]
        .iter()
        .map(|&ch| {
            u32::from(ch)
                .checked_sub(0xE0000)
                .and_then(char::from_u32)
                .filter(char::is_ascii_lowercase)
        })
        .collect();
    TAG_FLAGS
        .contains(&spelled?.as_str())
        .then_some(end + 1 - at)
}

fn is_variation_selector(ch: char) -> bool {
    matches!(ch,
        '\u{FE00}'..='\u{FE0F}'
        | '\u{E0100}'..='\u{E01EF}'
        | '\u{180B}'..='\u{180D}'
        | '\u{180F}')
}

fn is_filler(ch: char) -> bool {
    matches!(
        ch,
        '\u{034F}' // COMBINING GRAPHEME JOINER
        | '\u{115F}' // HANGUL CHOSEONG FILLER
        | '\u{1160}' // HANGUL JUNGSEONG FILLER
        | '\u{17B4}'
            ..='\u{17B5}' // KHMER VOWEL INHERENT AQ, AA
        | '\u{2800}' // BRAILLE PATTERN BLANK
        | '\u{3164}' // HANGUL FILLER
        | '\u{FFA0}' // HALFWIDTH HANGUL FILLER
        | '\u{16FE4}' // KHITAN SMALL SCRIPT FILLER
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAX: usize = 50;

    fn ok(raw: &str) -> String {
        clean("name", raw, MAX).unwrap_or_else(|err| panic!("{raw:?}: {err}"))
    }

    #[track_caller]
    fn refused(raw: &str, ch: char, rule: Rule) {
        assert_eq!(
            clean("name", raw, MAX),
            Err(TextError::Refused {
                field: "name",
                ch,
                rule
            }),
            "{raw:?}"
        );
    }

    #[test]
    fn names_in_every_script_pass_unchanged() {
        for name in [
            "Ada Lovelace",
            "José Müller-Łukasiewicz",
            "Nguyễn Thị Minh Khai",
            "李小龍",
            "山田 太郎",
            "김민준",
            "محمد عبد الله",
            "דוד בן־גוריון",
            "Ελένη",
            "Анна Каренина",
            "देवनागरी",
            "สมชาย",
            "O'Brien (ops) #1",
            "ᠮᠣᠩᠭᠣᠯ",
        ] {
            assert_eq!(ok(name), name);
        }
    }

    #[test]
    fn emoji_with_skin_tones_zwj_sequences_and_flags_pass() {
        for name in [
            "Ann 👩‍💻",
            "👩🏽‍💻",
            "👨‍👩‍👧‍👦",
            "🏳️‍🌈",
            "🏳️‍⚧️",
            "❤️‍🔥",
            "🧑🏿‍🤝‍🧑🏻",
            "👍🏿",
            "🇫🇷 🇯🇵",
            "🏴\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F}",
            "1\u{FE0F}\u{20E3}",
            "Ann ❤️",
        ] {
            assert_eq!(ok(name), name);
        }
    }

    #[test]
    fn text_is_stored_in_nfc_and_counted_after_it() {
        // e + COMBINING ACUTE ACCENT composes to é.
        assert_eq!(ok("Jose\u{0301}"), "José");
        assert_eq!(ok("e\u{0301}".repeat(MAX).as_str()), "é".repeat(MAX));
        assert!(matches!(
            clean("name", &"e\u{0301}".repeat(MAX + 1), MAX),
            Err(TextError::Length { .. })
        ));
        // Hangul jamo compose into syllables.
        assert_eq!(ok("\u{1100}\u{1161}"), "가");
    }

    #[test]
    fn white_space_at_the_ends_is_trimmed_and_blank_is_too_short() {
        assert_eq!(ok("  Ada  "), "Ada");
        for raw in ["", "   ", "\u{3000}\u{00A0}"] {
            let err = clean("name", raw, MAX).unwrap_err();
            assert_eq!(
                err,
                TextError::Length {
                    field: "name",
                    max: MAX
                }
            );
            assert_eq!(
                err.to_string(),
                "name must be 1 to 50 characters (counted after Unicode NFC normalization)"
            );
        }
        assert!(clean("name", &"x".repeat(MAX + 1), MAX).is_err());
        assert_eq!(ok(&"x".repeat(MAX)).len(), MAX);
    }

    #[test]
    fn control_characters_are_refused() {
        for ch in ['\u{0}', '\n', '\t', '\u{7F}', '\u{85}', '\u{9F}'] {
            refused(&format!("a{ch}b"), ch, Rule::Control);
        }
    }

    #[test]
    fn bidi_controls_and_invisible_format_characters_are_refused() {
        for ch in [
            '\u{202A}',
            '\u{202B}',
            '\u{202C}',
            '\u{202D}',
            '\u{202E}',
            '\u{2066}',
            '\u{2067}',
            '\u{2068}',
            '\u{2069}',
            '\u{200E}',
            '\u{200F}',
            '\u{061C}',
            '\u{200B}',
            '\u{200C}',
            '\u{2060}',
            '\u{2062}',
            '\u{FEFF}',
            '\u{00AD}',
            '\u{180E}',
            '\u{1D173}',
        ] {
            refused(&format!("ad{ch}min"), ch, Rule::Format);
        }
        // The classic spoof: "admin" followed by a reversed "txt.exe".
        refused("admin\u{202E}exe.txt", '\u{202E}', Rule::Format);
    }

    #[test]
    fn a_joiner_is_accepted_only_between_two_emoji() {
        for raw in [
            "ad\u{200D}min",
            "\u{200D}👩",
            "👩\u{200D}",
            "1\u{200D}2",
            "👩\u{200D}a",
        ] {
            refused(raw, ZWJ, Rule::Joiner);
        }
    }

    #[test]
    fn tag_characters_are_refused_but_in_the_three_tag_flags() {
        // ASCII smuggled in tags, after text and after a black flag.
        refused("Ann\u{E0041}\u{E0042}", '\u{E0041}', Rule::Format);
        refused("🏴\u{E0041}\u{E007F}", '\u{E0041}', Rule::Format);
        refused(
            "🏴\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}",
            '\u{E0067}',
            Rule::Format,
        );
        refused("Ann\u{E007F}", '\u{E007F}', Rule::Format);
        refused("🏴\u{E0067}x\u{E007F}", '\u{E0067}', Rule::Format);
        for flag in TAG_FLAGS {
            let tags: String = flag
                .chars()
                .map(|c| char::from_u32(u32::from(c) + 0xE0000).unwrap())
                .collect();
            assert!(clean("name", &format!("🏴{tags}{CANCEL_TAG}"), MAX).is_ok());
        }
    }

    #[test]
    fn private_use_and_unassigned_code_points_are_refused() {
        for ch in ['\u{E000}', '\u{F8FF}', '\u{F0000}', '\u{10FFFD}'] {
            refused(&format!("a{ch}"), ch, Rule::PrivateUse);
        }
        for ch in ['\u{0378}', '\u{FFFF}', '\u{E0080}', '\u{FFF0}', '\u{2FFFF}'] {
            refused(&format!("a{ch}"), ch, Rule::Unassigned);
        }
    }

    #[test]
    fn separators_other_than_the_space_are_refused() {
        for ch in [
            '\u{00A0}', '\u{1680}', '\u{2002}', '\u{2009}', '\u{200A}', '\u{202F}', '\u{205F}',
            '\u{3000}', '\u{2028}', '\u{2029}',
        ] {
            refused(&format!("Ann{ch}Lee"), ch, Rule::Separator);
        }
    }

    #[test]
    fn fillers_that_render_as_nothing_are_refused() {
        for ch in [
            '\u{115F}',
            '\u{1160}',
            '\u{3164}',
            '\u{FFA0}',
            '\u{2800}',
            '\u{034F}',
            '\u{17B4}',
            '\u{16FE4}',
        ] {
            refused(&format!("Ann{ch}"), ch, Rule::Filler);
            refused(&ch.to_string(), ch, Rule::Filler);
        }
    }

    #[test]
    fn a_variation_selector_must_follow_what_it_modifies() {
        // After a CJK ideograph (an ideographic variation sequence) and an emoji: fine.
        assert!(clean("name", "葛\u{E0100}", MAX).is_ok());
        assert!(clean("name", "☺\u{FE0E}", MAX).is_ok());
        assert!(clean("name", "ᠮ\u{180B}", MAX).is_ok());
        for raw in ["\u{FE0F}", "a \u{FE0F}", "a\u{FE0F}\u{FE0F}", "\u{E0100}"] {
            let ch = raw
                .chars()
                .rev()
                .find(|&c| is_variation_selector(c))
                .unwrap();
            refused(raw, ch, Rule::VariationSelector);
        }
    }

    #[test]
    fn marks_need_a_base_and_at_most_three_may_stack() {
        refused("\u{0301}Ann", '\u{0301}', Rule::MarkWithoutBase);
        refused("Ann \u{0301}", '\u{0301}', Rule::MarkWithoutBase);
        refused("\u{20DD}", '\u{20DD}', Rule::MarkWithoutBase);
        // Three marks that neither compose with the base nor reorder: accepted, a fourth is
        // refused.
        let three = "x\u{0300}\u{0301}\u{0302}";
        assert_eq!(ok(three), three);
        refused(&format!("{three}\u{0303}"), '\u{0303}', Rule::TooManyMarks);
        // Zalgo.
        let zalgo = "Z\u{0351}\u{036B}\u{0343}\u{036A}\u{0302}a\u{0306}l\u{0352}g\u{0350}o";
        assert_eq!(
            clean("name", zalgo, MAX).unwrap_err().rule(),
            Some(Rule::TooManyMarks)
        );
        // Pointed Hebrew (shin, shin dot, dagesh, qamats) and Devanagari vowel signs pass.
        assert!(clean("name", "\u{05E9}\u{05BC}\u{05C1}\u{05B8}", MAX).is_ok());
        assert!(clean("name", "क्षत्रिय", MAX).is_ok());
    }

    #[test]
    fn names_made_only_of_invisible_characters_are_refused() {
        for raw in [
            "\u{200B}",
            "\u{200B}\u{200C}\u{200D}",
            "\u{2060}\u{FEFF}",
            "\u{3164}\u{3164}",
            "\u{2800}",
            "\u{0301}\u{0301}",
            "\u{202E}",
            "\u{FE0F}",
            "\u{E0041}",
        ] {
            assert!(clean("name", raw, MAX).is_err(), "{raw:?}");
        }
    }

    #[test]
    fn the_message_names_the_field_the_code_point_and_the_rule() {
        let err = clean("displayName", "ad\u{202E}min", MAX).unwrap_err();
        assert_eq!(
            err.to_string(),
            "displayName must not contain U+202E: an invisible format character (bidi \
             control, zero-width character, tag...)"
        );
        let err = clean("title", "a\u{E0041}", MAX).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("title must not contain U+E0041: ")
        );
        let err = clean("title", "a\u{3000}b", MAX).unwrap_err();
        assert!(err.to_string().contains("U+3000: a separator other than"));
    }
}
