import ContinuumCore
import Foundation

/// A small, fast, seedable random number generator (SplitMix64), so that generated data is reproducible.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// `count` bytes of the generator's output, eight at a time (random photo bytes for tests and benchmarks).
    public mutating func bytes(count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        bytes.withUnsafeMutableBytes { raw in
            var offset = 0
            while offset < raw.count {
                let word = next()
                Swift.withUnsafeBytes(of: word) { word in
                    let n = min(8, raw.count - offset)
                    raw.baseAddress!.advanced(by: offset).copyMemory(from: word.baseAddress!, byteCount: n)
                }
                offset += 8
            }
        }
        return bytes
    }
}

/// Makes valid signed records for tests and benchmarks: each author's log numbered 1, 2, 3, … and chained by
/// `previous`, exactly as a real node would write it.
public struct RecordFactory: Sendable {
    public let authors: [NodeIdentity]
    private var heads: [AuthorID: (sequence: UInt64, id: RecordID)] = [:]
    /// Every record made so far, in creation order.
    public private(set) var records: [VerifiedRecord] = []
    public var random: SplitMix64
    /// A network group (PROTOCOL.md §2.7) the authors are in: each author's log then starts with its self-add to
    /// it, made before the author's first record, so that nodes of the network accept the logs.
    public var network: GroupID?

    /// Words captions are made of, with capitals and accents so that search folding is exercised.
    public static let words = [
        "Waterfall", "lake", "Café", "forest", "sunset", "Crème", "brûlée", "Zürich", "mountain", "river", "Ålesund",
        "beach", "harbour", "naïve", "garden", "bridge", "snow", "desert", "meadow", "city", "Señor", "dawn", "dusk",
        "island", "valley", "cliff", "storm", "market", "festival", "portrait",
    ]

    /// `authorCount` identities made from the seed, so that runs are reproducible.
    public init(authorCount: Int, seed: UInt64 = 1, network: GroupID? = nil) {
        self.network = network
        var random = SplitMix64(seed: seed)
        authors = (0..<authorCount).map { _ in
            var bytes = [UInt8](repeating: 0, count: 32)
            for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255, using: &random) }
            return try! NodeIdentity(seed: bytes)
        }
        self.random = random
    }

    /// Signs the next record in the author's log.
    @discardableResult
    public mutating func make(
        _ body: RecordBody,
        by authorIndex: Int,
        at createdAt: Timestamp? = nil
    )
        -> VerifiedRecord
    {
        let identity = authors[authorIndex]
        if let network, heads[identity.author] == nil {
            let change = MemberChange(group: network, action: .add, node: identity.node, log: identity.author)
            let time = Timestamp(milliseconds: 1_700_000_000_000 + Int64(records.count) * 1000)
            let join = try! identity.sign(
                RecordContent(
                    author: identity.author,
                    sequence: 1,
                    previous: nil,
                    createdAt: time,
                    body: .member(change)
                )
            )
            heads[identity.author] = (1, join.id)
            records.append(join)
        }
        let head = heads[identity.author]
        let sequence = (head?.sequence ?? 0) + 1
        let time = createdAt ?? Timestamp(milliseconds: 1_700_000_000_000 + Int64(records.count) * 1000)
        let content = RecordContent(
            author: identity.author,
            sequence: sequence,
            previous: head?.id,
            createdAt: time,
            body: body
        )
        let record = try! identity.sign(content)
        heads[identity.author] = (sequence, record.id)
        records.append(record)
        return record
    }

    /// A caption of two to four random words.
    public mutating func caption() -> String {
        (0..<Int.random(in: 2...4, using: &random)).map { _ in Self.words.randomElement(using: &random)! }
            .joined(separator: " ")
    }

    /// A photo reference for made-up bytes.
    public mutating func photo() -> PhotoReference {
        let seed = random.next()
        return PhotoReference(
            sha256: AssetHash.of(Data("photo-\(seed % 500)".utf8)),
            byteCount: 1000 + seed % 5_000_000,
            mediaType: MediaType.allCases.randomElement(using: &random)!,
            width: 640 + UInt32(seed % 4000),
            height: 480 + UInt32(seed % 3000)
        )
    }

    /// A post with a random caption, and a location about half the time.
    @discardableResult
    public mutating func post(by authorIndex: Int) -> VerifiedRecord {
        let location: Coordinate? =
            Bool.random(using: &random)
            ? Coordinate(
                latitude: Double.random(in: -60...60, using: &random),
                longitude: Double.random(in: -170...170, using: &random)
            )
            : nil
        return make(.post(caption: caption(), photo: photo(), location: location), by: authorIndex)
    }

    /// A mixed history: profiles, posts, comments (on anyone's posts), edits and deletes of one's own records (and,
    /// with a ``network``, each author's self-add before its first record).
    public mutating func history(count: Int) -> [VerifiedRecord] {
        var posts: [(PostID, author: Int)] = []
        var comments: [(CommentID, author: Int)] = []
        var made: [VerifiedRecord] = []
        while made.count < count {
            let author = Int.random(in: 0..<authors.count, using: &random)
            let roll = posts.isEmpty ? 20 : Int.random(in: 0..<100, using: &random)
            let record: VerifiedRecord
            switch roll {
            case 0..<5:
                record = make(.profile(name: "user \(author) v\(random.next() % 100)"), by: author)
            case 5..<40:
                record = post(by: author)
                posts.append((PostID(record.id), author))
            case 40..<80:
                let target = posts.randomElement(using: &random)!.0
                record = make(.comment(post: target, text: "comment \(caption())"), by: author)
                comments.append((CommentID(record.id), author))
            case 80..<90:
                guard let own = posts.filter({ $0.author == author }).randomElement(using: &random) else { continue }
                record = make(.edit(post: own.0, caption: caption()), by: author)
            default:
                var targets = Set<RecordID>()
                if let post = posts.filter({ $0.author == author }).randomElement(using: &random) {
                    targets.insert(post.0.record)
                }
                if let comment = comments.filter({ $0.author == author }).randomElement(using: &random) {
                    targets.insert(comment.0.record)
                }
                guard !targets.isEmpty else { continue }
                record = make(.delete(targets: targets.sorted()), by: author)
            }
            made.append(record)
        }
        guard network != nil else { return made }
        // The self-adds made on the way, each before its author's first record of the history.
        let ids = Set(made.map(\.id))
        return records.filter { ids.contains($0.id) || ($0.header.kind == .member && $0.header.sequence == 1) }
    }
}
