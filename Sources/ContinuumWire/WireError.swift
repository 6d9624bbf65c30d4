/// Why a frame was refused or a session ended: the payload of an ERROR message, and the error the codec throws.
///
/// The code says what went wrong in a way a program can act on; the message says it to a person.
public struct WireError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A numbered error code (Docs/PROTOCOL.md §7.5). Codes this node does not know are kept as numbers.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The number on the wire.
        public let rawValue: UInt16

        /// Any number, known or not.
        public init(rawValue: UInt16) { self.rawValue = rawValue }

        /// A frame breaks the format: bad length, unknown type, truncated or trailing bytes, a count or value out
        /// of range.
        public static let malformedFrame = Code(rawValue: 1)
        /// A frame's length is above the receiver's limit.
        public static let frameTooLarge = Code(rawValue: 2)
        /// An unknown frame version, or a protocol version in HELLO that the receiver does not speak.
        public static let unsupportedVersion = Code(rawValue: 3)
        /// No longer sent (HELLO named another network before groups); kept so that the number is not reused.
        public static let wrongNetwork = Code(rawValue: 4)
        /// HELLO comes from the receiving node itself.
        public static let selfConnection = Code(rawValue: 5)
        /// The node in HELLO is not the key of the peer's TLS certificate.
        public static let identityMismatch = Code(rawValue: 6)
        /// A record in RECORDS is invalid (its encoding or its signature).
        public static let badRecord = Code(rawValue: 7)
        /// The peer was silent for too long.
        public static let timeout = Code(rawValue: 8)
        /// There already is a session with this peer.
        public static let duplicateSession = Code(rawValue: 9)
        /// The sender is stopping.
        public static let shuttingDown = Code(rawValue: 10)
        /// One side runs with `--insecure-plaintext` and the other does not.
        public static let plaintextRefused = Code(rawValue: 11)
        /// A well-formed message that is not allowed in the session's current state.
        public static let unexpectedMessage = Code(rawValue: 12)
        /// The sender failed on its own side.
        public static let `internal` = Code(rawValue: 13)
        /// The peer made this node do more work than its budget allows (too many or too costly messages).
        public static let overBudget = Code(rawValue: 14)
        /// The two nodes share no group, or a message is about a group the session does not share.
        public static let notMember = Code(rawValue: 15)
        /// An invite that is unknown, used, expired, or whose proof does not match this connection.
        public static let inviteRefused = Code(rawValue: 16)
        /// A request to join is recorded and waits for an admin of the receiver's node to approve it: ask again later.
        public static let requestPending = Code(rawValue: 17)
        /// A request to join was denied by an admin of the receiver's node.
        public static let requestDenied = Code(rawValue: 18)
        /// The sender keeps as many sessions as it will (`--max-peers`) and the receiver is not one of its
        /// neighbours in the overlay: dial another node, or this one later.
        public static let busy = Code(rawValue: 19)

        /// The code in words, such as `malformed frame`; `error 99` for a code this node does not know.
        public var name: String {
            switch rawValue {
            case 1: "malformed frame"
            case 2: "frame too large"
            case 3: "unsupported version"
            case 4: "wrong network"
            case 5: "self connection"
            case 6: "identity mismatch"
            case 7: "bad record"
            case 8: "timeout"
            case 9: "duplicate session"
            case 10: "shutting down"
            case 11: "plaintext refused"
            case 12: "unexpected message"
            case 13: "internal error"
            case 14: "over budget"
            case 15: "not a member"
            case 16: "invite refused"
            case 17: "request pending"
            case 18: "request denied"
            case 19: "busy"
            default: "error \(rawValue)"
            }
        }

        public var description: String { name }
    }

    /// What kind of error.
    public var code: Code
    /// What was wrong, for a person. On the wire it is at most ``WireLimits/maxErrorMessageBytes`` of UTF-8.
    public var message: String

    /// An error with its code and message.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.name): \(message)" }
}
