/// How two vector clocks relate.
public enum ClockOrdering: Sendable, Hashable {
    /// Both hold exactly the same records.
    case equal
    /// The left clock holds a strict subset of what the right holds.
    case before
    /// The left clock holds a strict superset of what the right holds.
    case after
    /// Each holds something the other lacks.
    case concurrent
}

/// A node's state summary: for each author, the highest sequence number held contiguously from 1.
///
/// An author that is absent counts as 0. Clocks form a join semilattice under ``merging(_:)``.
public struct VectorClock: Sendable, Hashable, CustomStringConvertible {
    /// Only non-zero entries are kept, so that equal clocks are equal values.
    public private(set) var heads: [AuthorID: UInt64]

    public init(_ heads: [AuthorID: UInt64] = [:]) {
        self.heads = heads.filter { $0.value > 0 }
    }

    public subscript(author: AuthorID) -> UInt64 { heads[author] ?? 0 }

    /// Raises the author's entry to `sequence` if it is lower.
    public mutating func advance(_ author: AuthorID, to sequence: UInt64) {
        guard sequence > self[author] else { return }
        heads[author] = sequence
    }

    /// The least clock that covers both: the pointwise maximum.
    public func merging(_ other: VectorClock) -> VectorClock {
        var result = self
        for (author, sequence) in other.heads { result.advance(author, to: sequence) }
        return result
    }

    /// Compares pointwise.
    public func compare(_ other: VectorClock) -> ClockOrdering {
        var selfAhead = false
        var otherAhead = false
        for author in Set(heads.keys).union(other.heads.keys) {
            let mine = self[author]
            let theirs = other[author]
            if mine > theirs { selfAhead = true }
            if theirs > mine { otherAhead = true }
            if selfAhead && otherAhead { return .concurrent }
        }
        switch (selfAhead, otherAhead) {
        case (false, false): return .equal
        case (true, false): return .after
        case (false, true): return .before
        case (true, true): return .concurrent
        }
    }

    /// For each author, the sequence numbers this clock covers and `other` does not: what `other` lacks.
    public func missing(from other: VectorClock) -> [AuthorID: ClosedRange<UInt64>] {
        var result: [AuthorID: ClosedRange<UInt64>] = [:]
        for (author, sequence) in heads where sequence > other[author] {
            result[author] = (other[author] + 1)...sequence
        }
        return result
    }

    /// True when this clock covers the author's record at `sequence`.
    public func covers(_ author: AuthorID, _ sequence: UInt64) -> Bool { self[author] >= sequence }

    /// Sum of all entries: the number of records the clock covers.
    public var recordCount: UInt64 { heads.values.reduce(0, +) }

    public var description: String {
        "{" + heads.sorted { $0.key < $1.key }.map { "\($0.key.short):\($0.value)" }.joined(separator: ", ") + "}"
    }
}
