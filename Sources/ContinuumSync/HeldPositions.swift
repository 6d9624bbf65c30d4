import ContinuumCore
import ContinuumSession
import ContinuumWire

/// Where the records a session held back are in their logs (author and sequence), their logs not known here as
/// members' yet (PROTOCOL.md §7.8.6). They are asked for again with a REQUEST: the peer sent them down this
/// connection already, and a round sends no record twice down one connection; a REQUEST does (§7.8.7). Bounded: of
/// a peer that keeps sending records of logs not known, the positions beyond ``limit`` are not kept (a later round,
/// or the next copy the peer sends, brings those).
struct HeldPositions {
    /// The most positions kept: fewer than a REQUEST's ranges (``WireLimits/maxRanges``).
    static let limit = 4096
    private var sequences: [AuthorID: Set<UInt64>] = [:]
    /// The positions kept.
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// Keeps the positions of `refs` (each once), up to ``limit``.
    mutating func insert(_ refs: [RecordRef]) {
        for ref in refs where count < Self.limit {
            if sequences[ref.author, default: []].insert(ref.sequence).inserted { count += 1 }
        }
    }

    /// The positions kept, as the ranges of one REQUEST (consecutive sequences of a log in one range, authors in
    /// ascending order; ``limit`` positions make at most ``WireLimits/maxRanges`` ranges); they are forgotten.
    mutating func takeRanges() -> [LogRange] {
        let positions = sequences.sorted { $0.key < $1.key }.flatMap { author, held in
            held.sorted().map { (author: author, sequence: $0) }
        }
        sequences = [:]
        count = 0
        return LogRange.coalescing(positions)
    }
}
