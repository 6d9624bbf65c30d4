/// One thing a person may name by the start of one of its ids, or by one of its names: a group, a member, a peer, a
/// request to join.
public struct IDCandidate<Value: Sendable>: Sendable {
    /// What the lookup returns when the text names this candidate.
    public let value: Value
    /// The ids whose start names it (a member: its log key and its node id).
    public let ids: [any Identifier32]
    /// The names that name it, matched exactly (none where a name is someone's own choice and proves nothing).
    public let names: [String]

    /// A candidate named by the start of any of `ids`, or by `name` exactly when there is one.
    public init(_ value: Value, ids: [any Identifier32], name: String? = nil) {
        self.init(value, ids: ids, names: name.map { [$0] } ?? [])
    }

    /// A candidate named by the start of any of `ids`, or by any of `names` exactly.
    public init(_ value: Value, ids: [any Identifier32], names: [String]) {
        self.value = value
        self.ids = ids
        self.names = names
    }

    /// Whether `text` names this candidate: one of its names exactly, or 1 to 64 hex digits (either case) that one of
    /// its ids starts with. Empty text names nothing.
    public func isNamed(by text: String) -> Bool {
        guard !text.isEmpty else { return false }
        if names.contains(text) { return true }
        guard let prefix = IDPrefix(text) else { return false }
        return ids.contains { prefix.matches($0) }
    }
}

/// Why a person's text did not name exactly one candidate. Each caller words it its own way where its users rely on
/// a wording; ``description`` is the plain one.
public enum IDLookupError<Value: Sendable>: Error, CustomStringConvertible {
    /// The text is empty, or is not 1 to 64 hex digits and no candidate has it as a name.
    case notAnID(String)
    /// The text is a prefix, and no candidate's id starts with it (nor is it a candidate's name).
    case notFound(String)
    /// Several candidates match: all of them, in the order they were given.
    case ambiguous(String, matches: [IDCandidate<Value>])

    /// The text as the person gave it.
    public var text: String {
        switch self {
        case .notAnID(let text), .notFound(let text), .ambiguous(let text, _): text
        }
    }

    /// `'xyz' is not an id: …`, `nothing matches '5b'`, or `'5' matches 2: 5b43…, 5e1a…; type more digits` (up to
    /// ten, by the start of their first id).
    public var description: String {
        switch self {
        case .notAnID(let text):
            return IDPrefix.notAnID(text)
        case .notFound(let text):
            return "nothing matches '\(text)'"
        case .ambiguous(let text, let matches):
            let shown = matches.prefix(10).map { $0.ids.first?.short ?? $0.names.first ?? "?" }
            let more = matches.count > 10 ? ", …" : ""
            return "'\(text)' matches \(matches.count): \(shown.joined(separator: ", "))\(more); type more digits"
        }
    }
}

/// Finds the one thing a person names by the start of its id (as in git: `5b43`) or by its name: the lookup every
/// command and API route uses, so that empty text never matches everything.
public enum IDLookup {
    /// The value of the one candidate that `text` names (see ``IDCandidate/isNamed(by:)``). Throws
    /// ``IDLookupError/notAnID(_:)`` for empty text, or for text that is neither hex nor a candidate's name;
    /// ``IDLookupError/notFound(_:)`` when no candidate matches; ``IDLookupError/ambiguous(_:matches:)`` when
    /// several do. A name and an id prefix count alike: text that is one candidate's name and another's id prefix
    /// is ambiguous.
    public static func resolve<Value: Sendable>(
        _ text: String,
        among candidates: [IDCandidate<Value>]
    ) throws(IDLookupError<Value>) -> Value {
        let matches = candidates.filter { $0.isNamed(by: text) }
        if matches.count == 1 { return matches[0].value }
        guard matches.isEmpty else { throw .ambiguous(text, matches: matches) }
        throw IDPrefix(text) == nil ? .notAnID(text) : .notFound(text)
    }
}
