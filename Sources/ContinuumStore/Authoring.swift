import ContinuumCore
import Foundation
import GRDB

// Checks made before this node signs a record, shared by the command line and the HTTP API.

extension ContinuumStore {
    /// Checks the fields a new record would have (text rules, sizes, ranges) before anything is stored.
    public static func check(_ body: RecordBody) throws(StoreError) {
        let probe = RecordContent(
            author: AuthorID(unchecked: Data(count: 32)),
            sequence: 1,
            previous: nil,
            createdAt: .now(),
            body: body
        )
        do {
            try RecordFormat.validate(probe)
            try Reaction.checkKindRules(body)
        } catch {
            throw StoreError(.invalidInput, error.description)
        }
    }

    /// Refuses (`.notOwner`) to act on a record of another author's: one whose log is neither `identity`'s nor a log
    /// of its account (PROTOCOL.md §4.4). `what` names it: "post 5b43c74f439e".
    public func requireOwner(_ author: AuthorID, of what: String, identity: NodeIdentity) async throws {
        guard try await !sameOwner(author, identity.author) else { return }
        let name = try await displayName(of: author)
        let owner = name.map { "\($0) (\(author.short))" } ?? author.short
        throw StoreError(.notOwner, "\(what) belongs to \(owner); only its author can change or delete it")
    }

    /// The media type a live post declares for this photo, or nil when no live post here shows it.
    public func mediaType(ofPhoto hash: AssetHash) async throws -> MediaType? {
        try await read { db in
            try Int.fetchOne(
                db,
                sql: "SELECT media_type FROM post WHERE photo_sha256 = ? AND deleted = 0 LIMIT 1",
                arguments: [hash.bytes]
            )
            .flatMap { MediaType(rawValue: UInt8($0)) }
        }
    }
}
