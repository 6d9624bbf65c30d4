import ContinuumCore
import ContinuumDiscovery
import ContinuumMedia
import ContinuumStore
import Foundation

// The JSON that the front ends print: `--json` (Docs/CLI.md), the HTTP API (Docs/API.md) and `watch` lines. The
// store returns plain model values; each shape here is built from one of them, and only here do they meet JSON.
// Two conventions hold throughout: a time is an `RFC3339Time`, and a field documented as nullable is
// `@Nullable` (present as `null`) while a plain optional is left out when it has no value.

extension JSONEncoder {
    /// The encoder of every front end: keys sorted, `/` not escaped; one line, or `pretty` for the CLI's `--json`.
    public static func frontEnd(pretty: Bool = false) -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        if pretty { encoder.outputFormatting.insert(.prettyPrinted) }
        return encoder
    }
}

/// A time as the front ends show it: RFC 3339 in UTC with milliseconds, `2024-07-14T16:20:00.000Z`. The one
/// place a ``Timestamp`` becomes JSON.
public struct RFC3339Time: Encodable, Sendable, Hashable {
    public let timestamp: Timestamp

    public init(_ timestamp: Timestamp) { self.timestamp = timestamp }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(timestamp.rfc3339)
    }
}

/// An optional field that is always present: `null` when it has no value (a plain optional is left out).
@propertyWrapper
public struct Nullable<Value: Sendable>: Sendable {
    public var wrappedValue: Value?

    public init(wrappedValue: Value?) { self.wrappedValue = wrappedValue }
}

extension Nullable: Encodable where Value: Encodable {
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        if let wrappedValue { try container.encode(wrappedValue) } else { try container.encodeNil() }
    }
}

/// The photo of a post (Docs/CLI.md, "Post object").
public struct PhotoJSON: Encodable, Sendable {
    let sha256: AssetHash
    let bytes: UInt64
    let mediaType: String
    let width: UInt32
    let height: UInt32
    let available: Bool

    public init(_ photo: PhotoSummary) {
        sha256 = photo.sha256
        bytes = photo.bytes
        mediaType = photo.mediaType.mimeType
        width = photo.width
        height = photo.height
        available = photo.available
    }
}

/// A post: in `feed`, `search` and the API's lists; with its `comments` in `show`, `post`, `edit` and
/// `GET /api/posts/ID`, where the API adds `following` and `mine`.
public struct PostJSON: Encodable, Sendable {
    let id: PostID
    let author: AuthorID
    /// The author's account (one per person, whatever device wrote it); null while not held.
    @Nullable var account: AccountID?
    @Nullable var authorName: String?
    /// Only in a post's own view: the group it was shared in; absent for a post kept on this node alone.
    let group: GroupID?
    let caption: String
    let edited: Bool
    /// When it was posted.
    let createdAt: RFC3339Time
    /// When the photo was taken, if the post says.
    @Nullable var takenAt: RFC3339Time?
    let commentCount: Int
    /// Each reaction given, with its count, and this node's own (`null`: none).
    let reactions: [ReactionCountJSON]
    @Nullable var myReaction: String?
    @Nullable public private(set) var location: Coordinate?
    let photo: PhotoJSON
    /// Only in a post's own view.
    let comments: [CommentJSON]?
    /// Only from the API: whether this node follows the post, and whether it wrote it.
    let following: Bool?
    let mine: Bool?
    /// Only in the API's view of one post with a location: the city nearest to it (set by the API, which holds the
    /// gazetteer).
    public var place: PlaceJSON?

    /// A post in a list.
    public init(_ post: PostSummary) {
        self.init(post, comments: nil, following: nil, mine: nil, group: nil)
    }

    /// A post with its comments; `following` and `mine` as the API shows them.
    public init(_ detail: PostDetail, following: Bool? = nil, mine: Bool? = nil) {
        self.init(
            detail.post,
            comments: detail.comments.map(CommentJSON.init),
            following: following,
            mine: mine,
            group: detail.group
        )
    }

    private init(_ post: PostSummary, comments: [CommentJSON]?, following: Bool?, mine: Bool?, group: GroupID?) {
        self.group = group
        id = post.id
        author = post.author
        account = post.account
        authorName = post.authorName
        caption = post.caption
        edited = post.edited
        createdAt = RFC3339Time(post.createdAt)
        takenAt = post.photo.takenAt.map(RFC3339Time.init)
        commentCount = post.commentCount
        reactions = ReactionCountJSON.list(post.reactions)
        myReaction = post.reactions.mine?.name
        location = post.location
        photo = PhotoJSON(post.photo)
        self.comments = comments
        self.following = following
        self.mine = mine
    }
}

/// A comment under its post (Docs/CLI.md, "Comment object").
public struct CommentJSON: Encodable, Sendable {
    let id: CommentID
    let post: PostID
    let author: AuthorID
    /// The author's account; null while not held.
    @Nullable var account: AccountID?
    @Nullable var authorName: String?
    let text: String
    let createdAt: RFC3339Time
    let reactions: [ReactionCountJSON]
    @Nullable var myReaction: String?

    public init(_ comment: CommentSummary) {
        id = comment.id
        post = comment.post
        author = comment.author
        account = comment.account
        authorName = comment.authorName
        text = comment.text
        createdAt = RFC3339Time(comment.createdAt)
        reactions = ReactionCountJSON.list(comment.reactions)
        myReaction = comment.reactions.mine?.name
    }
}

/// One reaction given to a post or comment, and how many gave it: `{"name": "heart", "emoji": "❤️", "count": 2}`.
public struct ReactionCountJSON: Encodable, Sendable {
    let name: String
    let emoji: String
    let count: Int

    public static func list(_ reactions: ReactionCounts) -> [ReactionCountJSON] {
        reactions.counts.map { ReactionCountJSON(name: $0.emoji.name, emoji: $0.emoji.symbol, count: $0.count) }
    }
}

/// One page of the feed; `nextCursor` is `null` on the last page.
public struct FeedPageJSON: Encodable, Sendable {
    let posts: [PostJSON]
    @Nullable var nextCursor: String?

    public init(_ page: FeedPage) {
        posts = page.posts.map(PostJSON.init)
        nextCursor = page.nextCursor
    }
}

/// A fork, in `status` and in a `fork` event.
public struct ForkJSON: Encodable, Sendable {
    let author: AuthorID
    let sequence: UInt64
    let refused: RecordID
    let kept: RecordID
    let reason: String
    let detectedAt: RFC3339Time

    public init(_ fork: ForkSummary) {
        author = fork.author
        sequence = fork.sequence
        refused = fork.refused
        kept = fork.kept
        reason = fork.reason
        detectedAt = RFC3339Time(fork.detectedAt)
    }
}

/// What the store holds, in `status`.
public struct StoreCountsJSON: Encodable, Sendable {
    let records: Int
    let authors: Int
    let posts: Int
    let comments: Int
    let photos: Int
    let photoBytes: Int64
    let forks: Int

    public init(_ counts: StoreCounts) {
        records = counts.records
        authors = counts.authors
        posts = counts.posts
        comments = counts.comments
        photos = counts.photos
        photoBytes = counts.photoBytes
        forks = counts.forks
    }
}

/// A notification (Docs/CLI.md, "Notification object").
public struct NotificationJSON: Encodable, Sendable {
    let id: Int64
    let kind: String
    let post: PostID
    let record: RecordID
    @Nullable var author: AuthorID?
    @Nullable var authorName: String?
    @Nullable var text: String?
    let createdAt: RFC3339Time
    let read: Bool
    let whileOffline: Bool
    let delivery: String
    /// The post it is about, named without its content: who posted it, when, with how many comments.
    @Nullable var postHeadline: PostHeadlineJSON?
    /// For a reaction to a comment: the comment (left out otherwise).
    let comment: CommentID?

    public init(_ notification: NotificationSummary) {
        id = notification.id
        kind = notification.kind.rawValue
        post = notification.post
        record = notification.record
        author = notification.author
        authorName = notification.authorName
        text = notification.text
        createdAt = RFC3339Time(notification.createdAt)
        read = notification.read
        whileOffline = notification.whileOffline
        delivery = notification.delivery.rawValue
        postHeadline = notification.about.map(PostHeadlineJSON.init)
        comment = notification.reactedComment
    }
}

/// A post named without its content (Docs/CLI.md, "Notification object").
public struct PostHeadlineJSON: Encodable, Sendable {
    let author: AuthorID
    @Nullable var authorName: String?
    let postedAt: RFC3339Time
    let commentCount: Int
    let deleted: Bool
    /// The caption after edits; null once the post is deleted.
    @Nullable var caption: String?
    /// The same in words: "Alice's post of 2026-11-20 14:02 UTC, 3 comments".
    let words: String

    init(_ headline: PostHeadline) {
        author = headline.author
        authorName = headline.authorName
        postedAt = RFC3339Time(headline.postedAt)
        commentCount = headline.commentCount
        deleted = headline.deleted
        caption = headline.caption
        words = headline.words
    }
}

/// A followed post, in `following`: the post's fields are `null` once its author has deleted it.
public struct FollowedPostJSON: Encodable, Sendable {
    let post: PostID
    let followedAt: RFC3339Time
    let unread: Int
    let deleted: Bool
    @Nullable var caption: String?
    @Nullable var author: AuthorID?
    @Nullable var authorName: String?
    @Nullable var commentCount: Int?

    public init(_ followed: FollowedPost) {
        post = followed.post
        followedAt = RFC3339Time(followed.followedAt)
        unread = followed.unread
        deleted = followed.summary == nil
        caption = followed.summary?.caption
        author = followed.summary?.author
        authorName = followed.summary?.authorName
        commentCount = followed.summary?.commentCount
    }
}

/// A peer met, in `peers`: with how many posts it asked to have pushed (`null` when not connected to the running
/// node), and, from the API only, whether it is connected now. Its counters include what a session open now has
/// moved so far (``PeerRecord/adding(_:)``).
public struct PeerJSON: Encodable, Sendable {
    let id: AuthorID
    @Nullable var name: String?
    let address: String
    let state: String
    let lastSeen: RFC3339Time
    let recordsIn: Int64
    let recordsOut: Int64
    let bytesIn: Int64
    let bytesOut: Int64
    let connected: Bool?
    @Nullable var pushInterest: Int?

    /// `connected`: whether the running node has a session with the peer now (shown as a field, and it sets the
    /// state); `live`: the same, setting the state only. Either way the store's state is only a record of the last
    /// session's start or end, and the running node's word wins.
    public init(_ peer: PeerRecord, connected: Bool? = nil, live: Bool? = nil, pushInterest: Int?) {
        id = peer.id
        name = peer.name
        address = "\(peer.host.contains(":") ? "[\(peer.host)]" : peer.host):\(peer.port)"
        state = Self.state(peer.state, connected: connected ?? live)
        lastSeen = RFC3339Time(peer.lastSeen)
        recordsIn = peer.recordsIn
        recordsOut = peer.recordsOut
        bytesIn = peer.bytesIn
        bytesOut = peer.bytesOut
        self.connected = connected
        self.pushInterest = pushInterest
    }

    /// The state to show: `connected` while the running node has a session with the peer, `disconnected` for a
    /// session the store still records as up (its end was not recorded: the node was killed); else the store's.
    public static func state(_ stored: String, connected: Bool?) -> String {
        switch connected {
        case true?: "connected"
        case false? where stored == "connected": "disconnected"
        default: stored
        }
    }
}

/// LAN discovery's state, in `status` and `GET /api/status`.
public struct DiscoveryJSON: Encodable, Sendable {
    let state: DiscoveryStatus.State
    @Nullable var lastError: String?
    let peersSeen: Int
    let peersPresent: Int
    let otherNetworksSeen: Int
    @Nullable var serviceName: String?
    /// Open groups announced by the peers on the LAN now (`join NAME` joins one).
    let openGroups: [OpenGroupJSON]

    public init(_ status: DiscoveryStatus) {
        state = status.state
        lastError = status.lastError
        peersSeen = status.peersSeen
        peersPresent = status.peersPresent
        otherNetworksSeen = status.otherNetworksSeen
        serviceName = status.serviceName
        openGroups = status.openGroups.map(OpenGroupJSON.init)
    }
}

/// An open group announced on the LAN, and a node that announces it.
public struct OpenGroupJSON: Encodable, Sendable {
    let id: GroupID
    let name: String
    let node: AuthorID
    let address: String

    init(_ nearby: NearbyOpenGroup) {
        id = nearby.group.id
        name = nearby.group.name
        node = nearby.node
        address = nearby.host.contains(":") ? "[\(nearby.host)]:\(nearby.port)" : "\(nearby.host):\(nearby.port)"
    }
}

/// Notifications marked read now, and those still unread: `notifications --mark-read`,
/// `POST /api/notifications/read`.
public struct ReadMarksJSON: Encodable, Sendable {
    let marked: Int
    let unread: Int

    public init(_ marks: NodeActions.ReadMarks) {
        marked = marks.marked
        unread = marks.unread
    }
}

/// The devices of this node's account: `device list --json` and `GET /api/devices`.
public struct DeviceListJSON: Encodable, Sendable {
    struct Device: Encodable, Sendable {
        let id: AuthorID
        @Nullable var name: String?
        let founder: Bool
        let thisDevice: Bool
        @Nullable var lastSeen: RFC3339Time?
    }

    @Nullable var account: AccountID?
    let recoveryCode: Bool
    let devices: [Device]

    public init(_ list: DeviceList) {
        account = list.account
        recoveryCode = list.hasRecovery
        devices = list.devices.map {
            Device(
                id: $0.id,
                name: $0.name,
                founder: $0.founder,
                thisDevice: $0.thisDevice,
                lastSeen: $0.lastSeen.map(RFC3339Time.init)
            )
        }
    }
}

/// A city of the gazetteer (Docs/API.md, "Place object"); `distanceKm` is the distance from the post's location when
/// it is a post's place.
public struct PlaceJSON: Encodable, Sendable {
    let name: String
    @Nullable var region: String?
    let country: String
    let countryCode: String
    let latitude: Double
    let longitude: Double
    let population: Int
    let distanceKm: Double?

    public init(_ place: Place, distanceKm: Double? = nil) {
        name = place.name
        region = place.region
        country = place.country
        countryCode = place.countryCode
        latitude = place.coordinate.latitude
        longitude = place.coordinate.longitude
        population = place.population
        self.distanceKm = distanceKm.map { ($0 * 10).rounded() / 10 }
    }

    /// A post's place: the nearest city and how far it is.
    public init(_ nearest: (place: Place, distanceKm: Double)) {
        self.init(nearest.place, distanceKm: nearest.distanceKm)
    }
}
