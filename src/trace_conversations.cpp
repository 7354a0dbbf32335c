// SPDX-License-Identifier: MIT
// A conversations file (ShareGPT shape: the schema of Inferact/codex_swebenchpro_traces) read as
// calls through nlohmann's SAX events: only each message's role and length are kept, never its
// text nor a document tree.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kvroof/error.hpp"
#include "kvroof/io/presets.hpp"
#include "kvroof/io/trace_io.hpp"
#include "kvroof/spec/workload.hpp"
#include "presets_json.hpp"

namespace kvroof::io {

namespace {
using nlohmann::json;

enum class Side { prompt, response };

// The roles of a prompt (what the next call reads) and of a response (what a call writes).
bool side_of(const std::string& role, Side& side) {
    static const char* const prompt[] = {"human", "user", "system", "tool", "function", "observation"};
    static const char* const response[] = {"gpt", "assistant", "model"};
    for (const char* r : prompt)
        if (role == r) return side = Side::prompt, true;
    for (const char* r : response)
        if (role == r) return side = Side::response, true;
    return false;
}

// A trial's messages become calls: every prompt-side message since the last response is the next
// call's new input; a response closes the call. Input = everything before it and its new text,
// cached = everything before the new text (the session's earlier prompts and responses, which a
// prefix cache holds), output = the response; tokens = UTF-8 bytes / bytes_per_token, rounded.
class Trial {
public:
    Trial(std::string session, double bytes_per_token) : session_(std::move(session)), bpt_(bytes_per_token) {}

    void message(const std::string& at, Side side, double bytes, std::vector<TraceCall>& calls) {
        if (side == Side::prompt) {
            pending_ += bytes;
            prompts_ += 1;
            return;
        }
        if (prompts_ == 0)
            throw InputError(fmt::format("{}: a response with no prompt before it (a call needs its input first)", at));
        TraceCall c;
        c.session = session_;
        c.start_s = -1;  // the file has no times
        c.input = std::max(1.0, tokens(at, context_ + pending_));
        c.cached = std::min(c.input, tokens(at, context_));
        c.output = std::max(1.0, tokens(at, bytes));
        calls.push_back(c);
        context_ += pending_ + bytes;
        pending_ = 0;
        prompts_ = 0;
    }

private:
    double tokens(const std::string& at, double bytes) const {
        const double t = std::round(bytes / bpt_);
        if (t > limits::kMaxTokens)
            throw InputError(fmt::format("{}: {:.0f} tokens, more than a call may hold ({:.0f})", at, t, limits::kMaxTokens));
        return t;
    }
    std::string session_;
    double bpt_;
    double context_ = 0, pending_ = 0;  // bytes
    int prompts_ = 0;
};

// nlohmann's SAX interface over the file: [ {"conversations": [ {"from": R, "value": T}, ... ], ...}, ... ].
// Keys other than these, at any depth, are skipped with whatever they hold.
class Reader {
public:
    Reader(std::string where, double bytes_per_token) : where_(std::move(where)), bpt_(bytes_per_token) {}
    std::vector<TraceCall> calls;
    std::string error;  // set where the structure is wrong; parsing stops

    bool null() { return scalar("null"); }
    bool boolean(bool) { return scalar("a boolean"); }
    bool number_integer(json::number_integer_t) { return scalar("a number"); }
    bool number_unsigned(json::number_unsigned_t) { return scalar("a number"); }
    bool number_float(json::number_float_t, const std::string&) { return scalar("a number"); }
    bool binary(json::binary_t&) { return scalar("binary"); }
    bool string(std::string& s) {
        if (skip_ > 0 || level_ != kMessage) return scalar("a string");
        if (is_role(key_)) role_ = s;
        if (is_value(key_)) bytes_ = static_cast<double>(s.size());
        return true;
    }
    // A key read twice where it is read at all is refused, as in every JSON file kvroof reads (here the two would be
    // joined, where another reader keeps only the last).
    bool key(std::string& k) {
        if (skip_ > 0) return true;
        key_ = k;
        if (level_ == kTrial && k == "conversations" && has_conversations_)
            return fail(fmt::format("{}: 'conversations' given twice", trial_at()));
        if (level_ != kMessage) return true;
        if (is_role(k) && std::exchange(has_role_, true))
            return fail(fmt::format("{}: the role given twice ('from' and 'role' name one field)", message_at()));
        if (is_value(k) && std::exchange(has_value_, true))
            return fail(fmt::format("{}: the text given twice ('value' and 'content' name one field)", message_at()));
        return true;
    }
    bool start_object(std::size_t) { return open(true); }
    bool start_array(std::size_t) { return open(false); }
    bool end_object() { return close(); }
    bool end_array() { return close(); }
    bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
        // nlohmann's message ends with the token it read, which for a file cut off inside a message is that whole
        // text: kept to its first 200 characters.
        std::string what = json_read::json_message(e);
        if (what.size() > 200) what = what.substr(0, 200) + "…";
        error = fmt::format("{}: not valid JSON at byte {} ({})", where_, position, what);
        return false;
    }

private:
    // Where the parser is: the top array, a trial object, its conversations array, a message object.
    enum Level { kNone, kTop, kTrial, kConversation, kMessage };

    bool fail(std::string message) {
        error = std::move(message);
        return false;
    }
    static bool is_role(const std::string& k) { return k == "from" || k == "role"; }
    static bool is_value(const std::string& k) { return k == "value" || k == "content"; }
    std::string trial_at() const { return fmt::format("{}: trial {}", where_, trials_); }
    std::string message_at() const { return fmt::format("{}, message {}", trial_at(), messages_); }

    bool scalar(const char* what) {
        if (skip_ > 0) return true;
        if (level_ == kNone) return fail(fmt::format("{}: expected a JSON array of conversations, got {}", where_, what));
        if (level_ == kTop) return fail(fmt::format("{}: trial {}: expected an object, got {}", where_, trials_ + 1, what));
        if (level_ == kConversation)
            return fail(fmt::format("{}, message {}: expected an object, got {}", trial_at(), messages_ + 1, what));
        if (level_ == kTrial && key_ == "conversations")
            return fail(fmt::format("{}: 'conversations' must be an array, got {}", trial_at(), what));
        if (level_ == kMessage && (is_role(key_) || is_value(key_)))
            return fail(fmt::format("{}: '{}' must be a string, got {}", message_at(), key_, what));
        return true;  // another key's value
    }

    bool open(bool object) {
        if (skip_ > 0) {
            if (++skip_ > kMaxJsonDepth)  // deeper than any JSON file kvroof reads may nest
                return fail(fmt::format("{}: JSON nested deeper than {} levels", where_, kMaxJsonDepth));
            return true;
        }
        const char* got = object ? "an object" : "an array";
        switch (level_) {
            case kNone:
                if (object) return fail(fmt::format("{}: expected a JSON array of conversations, got an object", where_));
                level_ = kTop;
                return true;
            case kTop:
                if (!object) return fail(fmt::format("{}: trial {}: expected an object, got an array", where_, trials_ + 1));
                ++trials_;
                trial_.emplace(fmt::format("trial-{}", trials_), bpt_);
                has_conversations_ = false, messages_ = 0;
                level_ = kTrial;
                return true;
            case kTrial:
                if (key_ != "conversations") return ++skip_, true;
                if (object) return fail(fmt::format("{}: 'conversations' must be an array, got an object", trial_at()));
                has_conversations_ = true;
                level_ = kConversation;
                return true;
            case kConversation:
                ++messages_;
                if (!object) return fail(fmt::format("{}: expected an object, got {}", message_at(), got));
                has_role_ = has_value_ = false;
                key_.clear();
                level_ = kMessage;
                return true;
            case kMessage:
                if (is_role(key_) || is_value(key_))
                    return fail(fmt::format("{}: '{}' must be a string, got {}", message_at(), key_, got));
                return ++skip_, true;
        }
        return true;
    }

    bool close() {
        if (skip_ > 0) return --skip_, true;
        switch (level_) {
            case kMessage: {
                level_ = kConversation;
                if (!has_role_) return fail(fmt::format("{}: missing field 'from'", message_at()));
                if (!has_value_) return fail(fmt::format("{}: missing field 'value'", message_at()));
                Side side{};
                if (!side_of(role_, side))
                    return fail(
                        fmt::format("{}: unknown role '{}' (a prompt: human, user, system, tool, function, "
                                    "observation; a response: gpt, assistant, model)",
                                    message_at(), role_.size() > 40 ? role_.substr(0, 40) + "…" : role_));
                trial_->message(message_at(), side, bytes_, calls);
                return true;
            }
            case kConversation: level_ = kTrial; return true;
            case kTrial:
                level_ = kTop;
                if (!has_conversations_) return fail(fmt::format("{}: missing field 'conversations'", trial_at()));
                return true;
            case kTop: level_ = kNone; return true;
            case kNone: return true;
        }
        return true;
    }

    std::string where_;
    double bpt_;
    Level level_ = kNone;
    int skip_ = 0;  // depth inside a value being skipped, at most kMaxJsonDepth
    std::string key_, role_;
    bool has_role_ = false, has_value_ = false, has_conversations_ = false;
    double bytes_ = 0;
    std::size_t trials_ = 0, messages_ = 0;
    std::optional<Trial> trial_;
};
}  // namespace

std::vector<TraceCall> parse_conversations_text(std::string_view where, std::string_view text, double bytes_per_token) {
    Reader r{std::string(where), bytes_per_token};
    try {
        (void)json::sax_parse(text.begin(), text.end(), &r);
    } catch (const InputError& e) {  // a trial's token count out of bounds, a response with no prompt
        r.error = e.what();
    }
    if (!r.error.empty()) throw InputError(r.error);
    if (r.calls.empty()) throw InputError(fmt::format("{}: no calls in the conversations (no response follows a prompt)", where));
    return r.calls;
}

}  // namespace kvroof::io
