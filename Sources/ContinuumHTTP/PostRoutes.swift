import ContinuumCore
import ContinuumMedia
import ContinuumNode
import ContinuumStore
import Foundation
import Hummingbird

/// Posts and comments: the feed, search, one post, and every write to them (a new post and a new photo are
/// uploads, in PostRoutes+Upload.swift).
struct PostRoutes: Sendable {
    let store: ContinuumStore
    /// The node's identity: its records are signed with it, and its posts are `mine`.
    let identity: NodeIdentity
    /// Every write: posts, comments, edits, deletions.
    let actions: NodeActions
    /// Receives the photo of a new post or of a new photo for a post.
    let uploads: UploadReceiver
    /// Where a post was taken, by name (its `place`), and places by name (`GET /api/places`, `near=NAME`).
    let places: Gazetteer
    /// A guest's session sees its group alone.
    var scope = GuestScope()

    /// Adds the routes of posts and comments to `api` (the `/api` group).
    func register(on api: RouterGroup<BasicRequestContext>) {
        api.get("feed") { request, _ in try await feed(request) }
        api.get("search") { request, _ in try await search(request) }
        api.get("posts/:id") { request, context in
            let guest = try await scope.guest(of: request, in: store)
            // A guest names a post by its whole id: a prefix would list other groups' ids when ambiguous.
            let id = try await guest == nil ? resolvePost(context, in: store) : GuestScope.wholePost(context)
            try await scope.check(post: id, of: request, in: store)
            return try json(try await postView(id, guest: guest))
        }
        api.get("places") { request, _ in try placesNamed(request) }
        api.post("posts") { request, context in try await createPost(request, context: context) }
        api.patch("posts/:id") { request, context in try await edit(request, context: context) }
        api.put("posts/:id/photo") { request, context in try await replacePhoto(request, context: context) }
        api.delete("posts/:id") { _, context in try await delete(path: context, kind: .post) }
        api.post("posts/:id/comments") { request, context in try await comment(request, context: context) }
        api.delete("comments/:id") { _, context in try await delete(path: context, kind: .comment) }
        api.post("delete") { request, context in try await deleteMany(request, context: context) }
    }

    // MARK: Reading

    /// `GET /api/feed`: a page of posts, filtered by author, time and place.
    func feed(_ request: Request) async throws -> Response {
        let query = request.formQuery
        var feed = FeedQuery(limit: try limit(query, default: 20))
        let mine = try flag(query, "mine")
        let guest = try await scope.guest(of: request, in: store)
        if let author = query.get("author"), !author.isEmpty {
            guard !mine else { throw APIError.badRequest("mine=true and author cannot be combined", field: "author") }
            feed.author = try await resolveAuthor(author, guest: guest != nil)
        }
        if mine { feed.mine = identity.node }
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
            feed.near = try place(near, field: "near")
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
        feed.group = guest?.group
        if let guest, mine {
            // A guest's own posts: those of its log, not the node's.
            feed.mine = nil
            feed.author = guest.log
        }
        return try json(FeedPageJSON(try await store.feed(feed, viewer: guest?.log ?? identity.author)))
    }

    struct PostList: Encodable { let posts: [PostJSON] }

    /// The author `text` names: an id or its start, a name; for a guest, a whole log key only (a prefix or a name
    /// would list the keys of other groups' authors when ambiguous).
    func resolveAuthor(_ text: String, guest: Bool) async throws -> AuthorID {
        guard guest else {
            return try await storeCall(noun: "author", field: "author") { try await store.resolveAuthor(text) }
        }
        guard let author = AuthorID(hex: text) else {
            throw APIError(.notFound, "unknown_author", "a guest names an author by its whole log key", field: "author")
        }
        return author
    }

    /// `LAT,LON`, or the name of a city (the most populous of that name), else 400 `bad_location` on `field`.
    func place(_ text: String, field: String) throws -> Coordinate {
        guard let coordinate = places.coordinate(of: text) else {
            throw APIError(
                .badRequest,
                "bad_location",
                "\(field) '\(text)' is neither LAT,LON in decimal degrees nor the name of a city this node knows",
                field: field
            )
        }
        return coordinate
    }

    /// `GET /api/places?q=NAME`: the cities of that name (case and accents aside, or starting so), most populous
    /// first; at most `limit` (1 to 50, default 10).
    func placesNamed(_ request: Request) throws -> Response {
        let query = request.formQuery
        guard let name = query.get("q"), !TextRules.isBlank(name) else {
            throw APIError.badRequest("say which place: q=NAME, such as q=Paris", field: "q")
        }
        let count = try limit(query, default: 10)
        guard count <= 50 else {
            throw APIError.badRequest("limit must be a whole number from 1 to 50", field: "limit")
        }
        return try json(["places": places.find(String(name), limit: count).map { PlaceJSON($0) }])
    }

    /// `GET /api/search?q=TERM`.
    func search(_ request: Request) async throws -> Response {
        let query = request.formQuery
        guard let term = query.get("q"), !TextRules.isBlank(term) else {
            throw APIError.badRequest("say what to search for: q=TERM", field: "q")
        }
        let guest = try await scope.guest(of: request, in: store)
        let posts = try await store.search(
            term,
            limit: try limit(query, default: 50),
            viewer: guest?.log ?? identity.author,
            group: guest?.group
        )
        return try json(PostList(posts: posts.map(PostJSON.init)))
    }

    /// A post with its comments, and what this node thinks of it; for a guest, what the guest does (its reaction,
    /// whether it wrote the post).
    func postView(_ id: PostID, guest: GuestScope.Guest? = nil) async throws -> PostJSON {
        guard let detail = try await store.post(id, viewer: guest?.log ?? identity.author) else {
            throw APIError(.notFound, "unknown_post", "no post \(id.short) on this node")
        }
        let mine =
            if let guest { detail.post.account == guest.account } else {
                try await store.isOwn(detail.post.author, node: identity.node)
            }
        var view = PostJSON(
            detail,
            following: guest == nil ? try await store.isFollowing(id) : false,
            mine: mine
        )
        view.place = view.location.flatMap { places.nearest(to: $0) }.map(PlaceJSON.init)
        return view
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
        let id = try await resolvePost(context, in: store)
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
            _ = try await actions.edit(id, PostEdit(caption: body.caption, location: body.location), by: identity)
        }
        return try json(try await postView(id))
    }

    func comment(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let post = try await resolvePost(context, in: store)
        let body = try await request.decodeJSON(as: CommentBody.self, context: context)
        guard let text = body.text, !TextRules.isBlank(text) else {
            throw APIError(.badRequest, "blank_comment", "the comment is blank; write something", field: "text")
        }
        let id = try await withInvalidText(field: "text") {
            try await actions.comment(on: post, text: text, by: identity)
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
        let target = try await resolveTarget(text, noun: noun, in: store)
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
        for text in ids { targets.append(try await resolveTarget(text, noun: "record", in: store)) }
        return try await delete(targets)
    }

    struct Deleted: Encodable { let deleted: [String] }

    /// Deletes every target, all or none: each is checked to be this node's before anything is signed.
    func delete(_ targets: [ContinuumStore.Target]) async throws -> Response {
        let deletion = try await actions.delete(targets, by: identity)
        return try json(Deleted(deleted: deletion.targets.map(\.hex)))
    }
}

extension PostRoutes {
    /// The routes of posts over the parts of `services` they use, receiving photos with `uploads`.
    init(_ services: APIServices, uploads: UploadReceiver) {
        self.init(
            store: services.store,
            identity: services.identity,
            actions: services.actions,
            uploads: uploads,
            places: services.places
        )
    }
}
