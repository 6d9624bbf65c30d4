import ContinuumCore
import ContinuumTestSupport
import Testing

@Suite("Vector clocks")
struct VectorClockTests {
    /// Eight authors, so that random clocks overlap often.
    static let authors = (0..<8).map { index in
        AuthorID(hex: String(repeating: String(index, radix: 16), count: 64))!
    }

    static func randomClock(_ random: inout SplitMix64) -> VectorClock {
        var heads: [AuthorID: UInt64] = [:]
        for author in authors where Bool.random(using: &random) {
            heads[author] = UInt64.random(in: 0...6, using: &random)
        }
        return VectorClock(heads)
    }

    /// Pointwise `<=`, written out independently of `compare`.
    static func lessOrEqual(_ a: VectorClock, _ b: VectorClock) -> Bool {
        authors.allSatisfy { a[$0] <= b[$0] }
    }

    @Test("merge is commutative, associative and idempotent (5,000 random triples)")
    func semilatticeLaws() {
        var random = SplitMix64(seed: 42)
        for _ in 0..<5000 {
            let a = Self.randomClock(&random)
            let b = Self.randomClock(&random)
            let c = Self.randomClock(&random)
            #expect(a.merging(b) == b.merging(a))
            #expect(a.merging(b).merging(c) == a.merging(b.merging(c)))
            #expect(a.merging(a) == a)
            // The merge is the least upper bound.
            #expect(Self.lessOrEqual(a, a.merging(b)) && Self.lessOrEqual(b, a.merging(b)))
            for author in Self.authors { #expect(a.merging(b)[author] == max(a[author], b[author])) }
        }
    }

    @Test("compare agrees with pointwise order")
    func comparison() {
        var random = SplitMix64(seed: 7)
        var seen: Set<ClockOrdering> = []
        for _ in 0..<5000 {
            let a = Self.randomClock(&random)
            let b = Self.randomClock(&random)
            let expected: ClockOrdering =
                switch (Self.lessOrEqual(a, b), Self.lessOrEqual(b, a)) {
                case (true, true): .equal
                case (true, false): .before
                case (false, true): .after
                case (false, false): .concurrent
                }
            #expect(a.compare(b) == expected)
            seen.insert(expected)
        }
        #expect(seen.count == 4, "the generator covers every ordering")
    }

    @Test("missing(from:) lists exactly what the other lacks, and merging it in makes the other cover us")
    func missing() {
        var random = SplitMix64(seed: 11)
        for _ in 0..<5000 {
            let a = Self.randomClock(&random)
            let b = Self.randomClock(&random)
            let lack = a.missing(from: b)
            var patched = b
            for author in Self.authors {
                if a[author] > b[author] {
                    #expect(lack[author] == (b[author] + 1)...a[author])
                } else {
                    #expect(lack[author] == nil)
                }
                if let range = lack[author] { patched.advance(author, to: range.upperBound) }
            }
            #expect(Self.lessOrEqual(a, patched))
            #expect(patched == a.merging(b))
        }
    }

    @Test("zero entries do not make clocks unequal")
    func zeroes() {
        let author = Self.authors[0]
        #expect(VectorClock([author: 0]) == VectorClock())
        #expect(VectorClock([author: 0]).compare(VectorClock()) == .equal)
        #expect(VectorClock([author: 3]).recordCount == 3)
    }
}
