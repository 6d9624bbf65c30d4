import ContinuumCore

/// An error from the store, with a message that says what went wrong and what to do about it.
///
/// The ``Code`` set may grow; switch on it with a `default`.
public struct StoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is, for code that reacts to it.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Value: String, Hashable, Sendable {
            case identity, notFound, ambiguous, notOwner, invalidInput, invalidRecord, io, database, notMember
        }
        private let value: Value
        private init(_ value: Value) { self.value = value }

        /// The identity key file is missing, unsafe or corrupt.
        public static let identity = Code(.identity)
        /// No record matches the id or prefix.
        public static let notFound = Code(.notFound)
        /// An id prefix matches more than one record.
        public static let ambiguous = Code(.ambiguous)
        /// The record belongs to another author.
        public static let notOwner = Code(.notOwner)
        /// The input (text, file, cursor, filter) is not acceptable.
        public static let invalidInput = Code(.invalidInput)
        /// A record failed validation or signature checks.
        public static let invalidRecord = Code(.invalidRecord)
        /// A file operation failed.
        public static let io = Code(.io)
        /// SQLite reported an error.
        public static let database = Code(.database)
        /// The node, or a record's author, is not a member of the group it acts in.
        public static let notMember = Code(.notMember)

        public var description: String { value.rawValue }
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }

    static func record(_ error: RecordError) -> StoreError { StoreError(.invalidRecord, error.description) }
}
