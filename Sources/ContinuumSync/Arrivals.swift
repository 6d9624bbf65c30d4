import ContinuumCore
import NIOConcurrencyHelpers

/// The records a session's peer sent that live gossip may still find in the store: what keeps the engine from
/// sending a peer's records back to it (PROTOCOL.md §7.8.8), whatever the timing.
///
/// The engine's gossip reads new records from the store by polling, and the poll may find a batch the moment its
/// transaction commits, before the session has told its machine that the peer holds those records. So a record's
/// source is noted before it is stored, and forgotten only once a gossip pass that began after the store returned
/// has read the store to its end: that pass found the record, if it was new, and left the peer out.
struct Arrivals: Sendable, Hashable {
    /// Records being stored now (the store has not returned yet).
    private(set) var storing: Set<RecordID> = []
    /// Records whose store returned since the current gossip pass began.
    private(set) var stored: Set<RecordID> = []
    /// Records whose store returned before the current gossip pass began: that pass finds them if they are new.
    private(set) var sealed: Set<RecordID> = []

    /// Records from the peer, about to be stored.
    mutating func storing(_ ids: [RecordID]) { storing.formUnion(ids) }

    /// The store of these records returned (or failed): they are in the store, or will never be.
    mutating func returned(_ ids: [RecordID]) {
        for id in ids where storing.remove(id) != nil { stored.insert(id) }
    }

    /// A gossip pass begins: every record whose store returned is committed, so this pass reads it if it is new.
    mutating func passBegins() {
        sealed.formUnion(stored)
        stored.removeAll()
    }

    /// The gossip pass read the store to its end: the records sealed at its start were found, or were not new.
    mutating func passEnded() { sealed.removeAll() }

    /// Those of `ids` (records the gossip found) that came from the peer.
    func sent(among ids: [RecordID]) -> Set<RecordID> {
        Set(ids.filter { storing.contains($0) || stored.contains($0) || sealed.contains($0) })
    }

    /// How many records are remembered.
    var count: Int { storing.count + stored.count + sealed.count }
}

/// ``Arrivals`` shared between a session's storage (which notes what it stores) and the engine's gossip (which
/// reads it), under a lock.
final class ArrivalLedger: Sendable {
    private let state = NIOLockedValueBox(Arrivals())

    /// Stores records of the peer through `store`, noted as the peer's from before the transaction begins until
    /// gossip has passed them.
    func storing<Result>(_ ids: [RecordID], _ store: () async throws -> Result) async rethrows -> Result {
        state.withLockedValue { $0.storing(ids) }
        defer { state.withLockedValue { $0.returned(ids) } }
        return try await store()
    }

    func passBegins() { state.withLockedValue { $0.passBegins() } }

    func passEnded() { state.withLockedValue { $0.passEnded() } }

    /// Those of `ids` that came from the peer.
    func sent(among ids: [RecordID]) -> Set<RecordID> { state.withLockedValue { $0.sent(among: ids) } }

    /// What is remembered now.
    var snapshot: Arrivals { state.withLockedValue { $0 } }
}
