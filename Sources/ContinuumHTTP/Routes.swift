import ContinuumCore
import ContinuumDiscovery
import ContinuumNode
import ContinuumStore
import ContinuumSync
import Foundation
import Hummingbird
import Logging
import NIOCore

/// The API's routes (Docs/API.md). Every handler checks its input before it touches the store.
struct Routes: Sendable {
    let services: APIServices
    let configuration: APIConfiguration
    let logger: Logger
    /// The address the API is bound to (`host:port`, the real port when 0 was asked for).
    let address: @Sendable () -> String

    var store: ContinuumStore { services.store }

    /// Every route, in collections by what they serve, under `/api`.
    func register(on router: Router<BasicRequestContext>) {
        for collection in [nodeRoutes, postRoutes, followRoutes, photoRoutes, groupRoutes, settingsRoutes] {
            router.addRoutes(collection, atPath: "/api")
        }
    }

    /// The node: its OpenAPI document, status, peers and live events.
    var nodeRoutes: RouteCollection<BasicRequestContext> {
        let routes = RouteCollection(context: BasicRequestContext.self)
        routes.get("openapi.json") { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-cache"],
                body: .init(byteBuffer: ByteBuffer(bytes: try APIServer.openAPIDocument()))
            )
        }
        routes.get("status") { _, _ in try await status() }
        routes.get("peers") { _, _ in try await peers() }
        routes.get("events") { request, _ in try await events(request) }
        return routes
    }

    /// Posts and comments: the feed, search, one post, and every write to them.
    var postRoutes: RouteCollection<BasicRequestContext> {
        let routes = RouteCollection(context: BasicRequestContext.self)
        routes.get("feed") { request, _ in try await feed(request) }
        routes.get("search") { request, _ in try await search(request) }
        routes.get("posts/:id") { _, context in try await post(context) }
        routes.post("posts") { request, context in try await createPost(request, context: context) }
        routes.patch("posts/:id") { request, context in try await edit(request, context: context) }
        routes.put("posts/:id/photo") { request, context in try await replacePhoto(request, context: context) }
        routes.delete("posts/:id") { _, context in try await delete(path: context, kind: .post) }
        routes.post("posts/:id/comments") { request, context in try await comment(request, context: context) }
        routes.delete("comments/:id") { _, context in try await delete(path: context, kind: .comment) }
        routes.post("delete") { request, context in try await deleteMany(request, context: context) }
        return routes
    }

    /// Follows and the notifications they bring.
    var followRoutes: RouteCollection<BasicRequestContext> {
        let routes = RouteCollection(context: BasicRequestContext.self)
        routes.put("posts/:id/follow") { _, context in try await follow(context, on: true) }
        routes.delete("posts/:id/follow") { _, context in try await follow(context, on: false) }
        routes.post("posts/:id/follow/toggle") { _, context in try await follow(context, on: nil) }
        routes.get("following") { _, _ in
            try json(["posts": try await store.following().map(FollowedPostJSON.init)])
        }
        routes.get("notifications") { request, _ in try await notifications(request) }
        routes.post("notifications/read") { request, context in try await markRead(request, context: context) }
        return routes
    }

    /// Photos and their thumbnails, by SHA-256.
    var photoRoutes: RouteCollection<BasicRequestContext> {
        let routes = RouteCollection(context: BasicRequestContext.self)
        routes.post("photos/inspect") { request, context in try await inspectPhoto(request, context: context) }
        routes.get("photos/:sha256") { request, context in try await photo(request, context: context) }
        routes.get("photos/:sha256/thumbnail") { request, context in try await thumbnail(request, context: context) }
        return routes
    }

    // MARK: Reading

    struct Status: Encodable {
        let node: String
        let name: String?
        /// `0.3.0 (protocol 2)`, as `--version` prints it.
        let version: String
        /// Photos larger than this are not fetched by themselves (`--max-photo-mb`): `POST /api/photos/{sha256}/fetch`.
        let maxPhotoBytes: UInt64
        /// Where this node keeps its data; null where it has no data directory.
        @Nullable var dataDirectory: String?
        let listening: [String]
        let api: String
        let peers: Peers
        let records: Int
        let posts: Int
        let comments: Int
        /// Photo files held that a live post shows, and their bytes.
        let photos: Int
        let photoBytes: Int64
        let following: Int
        let unreadNotifications: Int
        /// The groups this node belongs to, and the requests to join that wait for an admin here.
        let groups: Int
        let pendingRequests: Int
        let discovery: DiscoveryJSON

        struct Peers: Encodable {
            let connected: Int
            let known: Int
        }
    }

    func status() async throws -> Response {
        let counts = try await store.counts()
        let known = try await store.peers().count
        let connected = await services.engine.connectedPeers().count
        return try json(
            Status(
                node: services.identity.author.hex,
                name: try await store.displayName(of: services.identity.author),
                version: NodeVersion.description,
                maxPhotoBytes: services.engine.maxPhotoBytes,
                dataDirectory: services.dataDirectory,
                listening: services.listening(),
                api: address(),
                peers: .init(connected: connected, known: known),
                records: counts.records,
                posts: counts.posts,
                comments: counts.comments,
                photos: counts.photos,
                photoBytes: counts.photoBytes,
                following: try await store.followedPosts().count,
                unreadNotifications: try await store.unreadNotificationCount(),
                groups: try await store.groups().count,
                pendingRequests: try await store.joinRequests().count,
                discovery: DiscoveryJSON(services.discovery())
            )
        )
    }

    struct PeerList: Encodable {
        let peers: [PeerJSON]
        let discovery: DiscoveryJSON
    }

    func peers() async throws -> Response {
        let connected = Set(await services.engine.connectedPeers())
        let interest = await services.engine.peerInterest()
        // The store first: a session that ends between the two reads is then counted once (live), not twice.
        let stored = try await store.peers()
        let traffic = await services.engine.liveTraffic()
        let lines = stored.map {
            PeerJSON(
                $0.adding(traffic[$0.id].map(LiveTraffic.init)),
                connected: connected.contains($0.id),
                pushInterest: interest[$0.id]
            )
        }
        return try json(PeerList(peers: lines, discovery: DiscoveryJSON(services.discovery())))
    }

    func feed(_ request: Request) async throws -> Response {
        let query = request.uri.queryParameters
        var feed = FeedQuery(limit: try limit(query, default: 20))
        let mine = try flag(query, "mine")
        if let author = query.get("author"), !author.isEmpty {
            guard !mine else { throw APIError.badRequest("mine=true and author cannot be combined", field: "author") }
            do {
                feed.author = try await store.resolveAuthor(author)
            } catch let error as StoreError {
                throw APIError.from(error, noun: "author", field: "author")
            }
        }
        if mine { feed.mine = services.identity.node }
        if let since = query.get("since"), !since.isEmpty {
            guard let time = Timestamp(since: since) else {
                throw APIError(
                    .badRequest,
                    "bad_since",
                    "since '\(since)' is not a duration (30m, 12h, 5d, 2w) or a date (2024-07-14 or 2024-07-14T16:20:00Z)",
                    field: "since"
                )
            }
            feed.since = time
        }
        if let near = query.get("near"), !near.isEmpty {
            feed.near = try coordinate(near, field: "near")
            feed.radiusKm = 10
        }
        if let radius = query.get("radiusKm") {
            guard feed.near != nil else { throw APIError.badRequest("radiusKm needs near=LAT,LON", field: "radiusKm") }
            guard let km = Double(radius), km > 0, km <= 20_040 else {
                throw APIError.badRequest("radiusKm must be a number more than 0 and at most 20040", field: "radiusKm")
            }
            feed.radiusKm = km
        }
        if let cursor = query.get("cursor"), !cursor.isEmpty {
            do {
                feed.cursor = try FeedCursor(token: cursor)
            } catch {
                throw APIError(.badRequest, "bad_cursor", error.message, field: "cursor")
            }
        }
        return try json(FeedPageJSON(try await store.feed(feed)))
    }

    struct PostList: Encodable { let posts: [PostJSON] }

    func search(_ request: Request) async throws -> Response {
        let query = request.uri.queryParameters
        guard let term = query.get("q"), !TextRules.isBlank(term) else {
            throw APIError.badRequest("say what to search for: q=TERM", field: "q")
        }
        let posts = try await store.search(term, limit: try limit(query, default: 50))
        return try json(PostList(posts: posts.map(PostJSON.init)))
    }

    /// A post with its comments, and what this node thinks of it.
    func postView(_ id: PostID) async throws -> PostJSON {
        guard let detail = try await store.post(id) else {
            throw APIError(.notFound, "unknown_post", "no post \(id.short) on this node")
        }
        return PostJSON(
            detail,
            following: try await store.isFollowing(id),
            mine: try await store.isOwn(detail.post.author, node: services.identity.node)
        )
    }

    func post(_ context: BasicRequestContext) async throws -> Response {
        try json(try await postView(try await resolvePost(context)))
    }

    // MARK: Writing

    /// `PATCH /api/posts/{id}`: any of `caption` and `location`; a `location` of `null` removes it, an absent one
    /// leaves it.
    struct EditBody: Decodable {
        let caption: String?
        let location: PostChange.Location

        enum CodingKeys: String, CodingKey { case caption, location }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            caption = try container.decodeIfPresent(String.self, forKey: .caption)
            if !container.contains(.location) {
                location = .unchanged
            } else if try container.decodeNil(forKey: .location) {
                location = .removed
            } else {
                location = .set(try container.decode(Coordinate.self, forKey: .location))
            }
        }
    }
    struct CommentBody: Decodable { let text: String? }
    struct IDsBody: Decodable { let ids: [String]? }

    func edit(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let id = try await resolvePost(context)
        let body = try await request.decodeJSON(as: EditBody.self, context: context)
        if let caption = body.caption, TextRules.isBlank(caption) {
            throw APIError(.badRequest, "missing_caption", "the new caption is blank; write one", field: "caption")
        }
        guard body.caption != nil || body.location != .unchanged else {
            throw APIError(
                .badRequest,
                "nothing_to_change",
                "send a caption, a location, or location null to remove it (a new photo goes to PUT /api/posts/ID/photo)"
            )
        }
        try await withInvalidText(field: "caption") {
            _ = try await services.actions.edit(
                id,
                PostEdit(caption: body.caption, location: body.location),
                by: services.identity
            )
        }
        return try json(try await postView(id))
    }

    func comment(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let post = try await resolvePost(context)
        let body = try await request.decodeJSON(as: CommentBody.self, context: context)
        guard let text = body.text, !TextRules.isBlank(text) else {
            throw APIError(.badRequest, "blank_comment", "the comment is blank; write something", field: "text")
        }
        let id = try await withInvalidText(field: "text") {
            try await services.actions.comment(on: post, text: text, by: services.identity)
        }
        guard let comment = try await store.post(post)?.comments.first(where: { $0.id == id }) else {
            throw APIError(.internalServerError, "internal", "the comment was stored but cannot be read back")
        }
        return try json(CommentJSON(comment), status: .created)
    }

    enum TargetKind { case post, comment }

    func delete(path context: BasicRequestContext, kind: TargetKind) async throws -> Response {
        let text = try context.parameters.require("id")
        let noun = kind == .post ? "post" : "comment"
        let target = try await resolveTarget(text, noun: noun)
        switch (target, kind) {
        case (.post, .post), (.comment, .comment): break
        default: throw APIError(.notFound, "unknown_\(noun)", "no \(noun) matches '\(text)'")
        }
        return try await delete([target])
    }

    func deleteMany(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(as: IDsBody.self, context: context)
        guard let ids = body.ids, !ids.isEmpty else {
            throw APIError.badRequest("name at least one post or comment: {\"ids\": [...]}", field: "ids")
        }
        guard ids.count <= 10_000 else { throw APIError.badRequest("at most 10000 ids at once", field: "ids") }
        var targets: [ContinuumStore.Target] = []
        for text in ids { targets.append(try await resolveTarget(text, noun: "record")) }
        return try await delete(targets)
    }

    struct Deleted: Encodable { let deleted: [String] }

    /// Deletes every target, all or none: each is checked to be this node's before anything is signed.
    func delete(_ targets: [ContinuumStore.Target]) async throws -> Response {
        let deletion = try await services.actions.delete(targets, by: services.identity)
        return try json(Deleted(deleted: deletion.targets.map(\.hex)))
    }

    struct Following: Encodable {
        let post: String
        let following: Bool
    }

    /// Follows (true), unfollows (false) or toggles (nil) a post.
    func follow(_ context: BasicRequestContext, on: Bool?) async throws -> Response {
        let post = try await resolvePost(context)
        let following: Bool
        switch on {
        case true?:
            _ = try await services.actions.follow(post)
            following = true
        case false?:
            _ = try await services.actions.unfollow(post)
            following = false
        case nil:
            following = try await services.actions.toggleFollow(post)
        }
        return try json(Following(post: post.hex, following: following))
    }

    struct NotificationList: Encodable {
        let notifications: [NotificationJSON]
        let unread: Int
    }

    func notifications(_ request: Request) async throws -> Response {
        let query = request.uri.queryParameters
        let list = try await store.notifications(
            unreadOnly: try flag(query, "unread"),
            limit: try limit(query, default: 50)
        )
        return try json(
            NotificationList(
                notifications: list.map(NotificationJSON.init),
                unread: try await store.unreadNotificationCount()
            )
        )
    }

    struct MarkReadBody: Decodable {
        let ids: [Int64]?
        let all: Bool?
    }

    func markRead(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let body = try await request.decodeJSON(as: MarkReadBody.self, context: context)
        let marks: NodeActions.ReadMarks
        switch (body.ids, body.all) {
        case (nil, true?):
            marks = try await services.actions.markRead(.all)
        case (let ids?, nil) where !ids.isEmpty, (let ids?, false?) where !ids.isEmpty:
            do {
                marks = try await services.actions.markRead(.numbered(ids))
            } catch let error as StoreError {
                throw APIError.from(error, noun: "notification", field: "ids")
            }
        default:
            throw APIError.badRequest("send {\"ids\": [numbers]} or {\"all\": true}", field: "ids")
        }
        return try json(ReadMarksJSON(marks))
    }

    // MARK: Helpers

    func resolvePost(_ context: BasicRequestContext) async throws -> PostID {
        let text = try context.parameters.require("id")
        do {
            return try await store.resolvePost(text)
        } catch let error as StoreError {
            throw APIError.from(error, noun: "post")
        }
    }

    func resolveTarget(_ text: String, noun: String) async throws -> ContinuumStore.Target {
        do {
            return try await store.resolveTarget(text)
        } catch let error as StoreError {
            throw APIError.from(error, noun: noun)
        }
    }

    /// Runs an action, answering a record that breaks a rule of the format (``RecordRefused``) with 400
    /// `invalid_text` on `field`.
    func withInvalidText<T>(field: String, _ action: () async throws -> T) async throws -> T {
        do {
            return try await action()
        } catch let error as RecordRefused {
            throw APIError(.badRequest, "invalid_text", error.message, field: field)
        }
    }

    func coordinate(_ text: String, field: String) throws -> Coordinate {
        guard let coordinate = Coordinate(parsing: text) else {
            throw APIError(
                .badRequest,
                "bad_location",
                "\(field) '\(text)' is not LAT,LON in decimal degrees (latitude -90...90, longitude -180...180)",
                field: field
            )
        }
        return coordinate
    }

    func limit(_ query: Parameters, default value: Int) throws -> Int {
        guard let text = query.get("limit") else { return value }
        guard let limit = Int(text), (1...500).contains(limit) else {
            throw APIError.badRequest("limit must be a whole number from 1 to 500", field: "limit")
        }
        return limit
    }

    func flag(_ query: Parameters, _ name: String) throws -> Bool {
        switch query.get(name) {
        case nil, "false", "0": return false
        case "true", "1", "": return true
        case let other?: throw APIError.badRequest("\(name) must be true or false, not '\(other)'", field: name)
        }
    }

    func json(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        let data = try JSONEncoder.frontEnd().encode(value)
        return Response(
            status: status,
            headers: [.contentType: "application/json; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: data))
        )
    }
}
