import ContinuumCore
import Foundation
import GRDB

/// The store's migrations. Each one is frozen once it has shipped: change the schema by adding a migration.
enum Schema {
    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1: record log, derived views, search, follows, notifications") { db in
            // Every record, verbatim. `bytes` is exactly what was signed plus the signature.
            try db.execute(
                sql: """
                    -- No index on the random id: duplicates and forks are found by (author, seq).
                    CREATE TABLE record (
                        id BLOB NOT NULL,
                        author BLOB NOT NULL,
                        seq INTEGER NOT NULL,
                        previous BLOB,
                        kind INTEGER NOT NULL,
                        created_at INTEGER NOT NULL,
                        received_at INTEGER NOT NULL,
                        bytes BLOB NOT NULL,
                        UNIQUE (author, seq)
                    );
                    -- The vector clock: per author, the highest sequence held contiguously from 1, and the highest held.
                    CREATE TABLE log_head (
                        author BLOB PRIMARY KEY NOT NULL,
                        contiguous INTEGER NOT NULL,
                        max_seq INTEGER NOT NULL
                    ) WITHOUT ROWID;
                    -- Evidence of forks: a second record for an (author, seq) we already hold, or one whose
                    -- `previous` contradicts its neighbour. Kept out of the log.
                    CREATE TABLE fork (
                        id BLOB PRIMARY KEY NOT NULL,
                        author BLOB NOT NULL,
                        seq INTEGER NOT NULL,
                        conflicts_with BLOB NOT NULL,
                        reason TEXT NOT NULL,
                        bytes BLOB NOT NULL,
                        detected_at INTEGER NOT NULL
                    ) WITHOUT ROWID;
                    CREATE TABLE profile (
                        author BLOB PRIMARY KEY NOT NULL,
                        name TEXT NOT NULL,
                        seq INTEGER NOT NULL
                    ) WITHOUT ROWID;
                    -- Derived from the records: caption after edits, deletion, comment count.
                    CREATE TABLE post (
                        rowid INTEGER PRIMARY KEY,
                        id BLOB NOT NULL UNIQUE,
                        author BLOB NOT NULL,
                        seq INTEGER NOT NULL,
                        created_at INTEGER NOT NULL,
                        original_caption TEXT NOT NULL,
                        caption TEXT NOT NULL,
                        edited INTEGER NOT NULL DEFAULT 0,
                        photo_sha256 BLOB NOT NULL,
                        photo_bytes INTEGER NOT NULL,
                        media_type INTEGER NOT NULL,
                        width INTEGER NOT NULL,
                        height INTEGER NOT NULL,
                        lat_e7 INTEGER,
                        lon_e7 INTEGER,
                        deleted INTEGER NOT NULL DEFAULT 0,
                        comment_count INTEGER NOT NULL DEFAULT 0
                    );
                    CREATE INDEX post_feed ON post (created_at DESC, id DESC) WHERE deleted = 0;
                    CREATE INDEX post_by_author ON post (author, created_at DESC, id DESC) WHERE deleted = 0;
                    -- A comment may arrive before its post; it is kept and shows when the post does.
                    -- Rows in arrival order (rowid), looked up by the random id through a small index.
                    CREATE TABLE comment (
                        id BLOB NOT NULL UNIQUE,
                        post BLOB NOT NULL,
                        author BLOB NOT NULL,
                        seq INTEGER NOT NULL,
                        created_at INTEGER NOT NULL,
                        text TEXT NOT NULL,
                        deleted INTEGER NOT NULL DEFAULT 0
                    );
                    CREATE INDEX comment_by_post ON comment (post, created_at, id);
                    CREATE TABLE edit (
                        id BLOB NOT NULL UNIQUE,
                        post BLOB NOT NULL,
                        author BLOB NOT NULL,
                        seq INTEGER NOT NULL,
                        caption TEXT NOT NULL
                    );
                    CREATE INDEX edit_by_post ON edit (post, author, seq DESC);
                    -- One row per (deleted record, delete record). Applies only when the authors match.
                    CREATE TABLE tombstone (
                        target BLOB NOT NULL,
                        delete_id BLOB NOT NULL,
                        author BLOB NOT NULL,
                        PRIMARY KEY (target, delete_id)
                    ) WITHOUT ROWID;
                    -- Case- and diacritic-folded captions of live posts; rowid = post.rowid.
                    CREATE VIRTUAL TABLE post_search USING fts5(folded, tokenize = 'trigram');
                    -- Photos whose complete bytes are on disk.
                    CREATE TABLE asset (
                        sha256 BLOB PRIMARY KEY NOT NULL,
                        bytes INTEGER NOT NULL,
                        stored_at INTEGER NOT NULL
                    ) WITHOUT ROWID;
                    -- Posts this node follows (used by push, a later feature).
                    CREATE TABLE follow (
                        post BLOB PRIMARY KEY NOT NULL,
                        followed_at INTEGER NOT NULL
                    ) WITHOUT ROWID;
                    -- At most one notification per (kind, record): delivery by several paths notifies once.
                    CREATE TABLE notification (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        kind TEXT NOT NULL,
                        post BLOB NOT NULL,
                        record BLOB NOT NULL,
                        created_at INTEGER NOT NULL,
                        read_at INTEGER,
                        while_offline INTEGER NOT NULL DEFAULT 0,
                        UNIQUE (kind, record)
                    );
                    """
            )
        }
        migrator.registerMigration("v2: peers met") { db in
            try db.execute(
                sql: """
                    -- Every peer this node has had a session with, so that it can dial them again on start.
                    CREATE TABLE peer (
                        node BLOB PRIMARY KEY NOT NULL,
                        name TEXT,
                        host TEXT NOT NULL,
                        port INTEGER NOT NULL,
                        state TEXT NOT NULL,
                        last_seen INTEGER NOT NULL,
                        records_in INTEGER NOT NULL DEFAULT 0,
                        records_out INTEGER NOT NULL DEFAULT 0,
                        bytes_in INTEGER NOT NULL DEFAULT 0,
                        bytes_out INTEGER NOT NULL DEFAULT 0
                    ) WITHOUT ROWID;
                    """
            )
        }
        migrator.registerMigration("v3: notification details") { db in
            try db.execute(
                sql: """
                    -- How the record reached this node (local, live, push, catch-up), who made it, and its text
                    -- (the comment, or the new caption) as it was when the notification was made.
                    ALTER TABLE notification ADD COLUMN delivery TEXT NOT NULL DEFAULT 'live';
                    ALTER TABLE notification ADD COLUMN author BLOB;
                    ALTER TABLE notification ADD COLUMN text TEXT;
                    CREATE INDEX notification_unread ON notification (post) WHERE read_at IS NULL;
                    """
            )
        }
        migrator.registerMigration("v4: clocks exchanged with each peer") { db in
            try db.execute(
                sql: """
                    -- The last clock sent to the peer in a round and the last received from it (CLOCK's encoding),
                    -- so that the next round, even after a reconnect, sends only what changed (CLOCK_SINCE).
                    ALTER TABLE peer ADD COLUMN clock_sent BLOB;
                    ALTER TABLE peer ADD COLUMN clock_received BLOB;
                    """
            )
        }
        migrator.registerMigration("v5: photos and thumbnails each peer could not supply") { db in
            try db.execute(
                sql: """
                    -- A peer answered PHOTO_MISSING (kind 0) or THUMB_MISSING (kind 1) for a photo: when to ask it
                    -- again (Unix ms) and how many times it has said so. Kept across restarts, so that a reconnect
                    -- does not ask again for everything the peer lacked last time. Rows go when the photo arrives.
                    CREATE TABLE peer_lack (
                        peer BLOB NOT NULL,
                        sha256 BLOB NOT NULL,
                        kind INTEGER NOT NULL,
                        retry_at INTEGER NOT NULL,
                        attempts INTEGER NOT NULL,
                        PRIMARY KEY (peer, sha256, kind)
                    ) WITHOUT ROWID;
                    CREATE INDEX peer_lack_photo ON peer_lack (sha256);
                    """
            )
        }
        migrator.registerMigration(protocolV2) { db in
            // Records of protocol v1 cannot be converted (their authors signed them); ContinuumStore refuses such a
            // store before migrating, so every table below is empty.
            try db.execute(
                sql: """
                    -- `bytes` is now the record's header (signed bytes and signature); `content` its content, NULL
                    -- once erased (or for a delete, which has none). What is sent is bytes || content.
                    ALTER TABLE record ADD COLUMN content BLOB;
                    DROP TABLE post;
                    CREATE TABLE post (
                        rowid INTEGER PRIMARY KEY,
                        id BLOB NOT NULL UNIQUE,
                        author BLOB NOT NULL,
                        seq INTEGER NOT NULL,
                        -- When it was posted (the record's createdAt): orders, pages and filters the feed.
                        created_at INTEGER NOT NULL,
                        original_caption TEXT NOT NULL,
                        caption TEXT NOT NULL,
                        edited INTEGER NOT NULL DEFAULT 0,
                        -- The photo shown: the post's own, or the one its latest photo edit put in.
                        photo_sha256 BLOB NOT NULL,
                        photo_bytes INTEGER NOT NULL,
                        media_type INTEGER NOT NULL,
                        width INTEGER NOT NULL,
                        height INTEGER NOT NULL,
                        -- When the photo was taken, if known.
                        taken_at INTEGER,
                        lat_e7 INTEGER,
                        lon_e7 INTEGER,
                        -- 1: deleted by its author; every content column above is then blank.
                        deleted INTEGER NOT NULL DEFAULT 0,
                        comment_count INTEGER NOT NULL DEFAULT 0
                    );
                    CREATE INDEX post_feed ON post (created_at DESC, id DESC) WHERE deleted = 0;
                    CREATE INDEX post_by_author ON post (author, created_at DESC, id DESC) WHERE deleted = 0;
                    CREATE INDEX post_photo ON post (photo_sha256) WHERE deleted = 0;
                    DROP TABLE edit;
                    -- An edit changes any of caption, photo (with its taken-at) and location (0: unchanged, 1: set
                    -- to lat/lon, 2: removed). Rows of a deleted post's edits are removed with their content.
                    CREATE TABLE edit (
                        id BLOB NOT NULL UNIQUE,
                        post BLOB NOT NULL,
                        author BLOB NOT NULL,
                        seq INTEGER NOT NULL,
                        caption TEXT,
                        photo_sha256 BLOB,
                        photo_bytes INTEGER,
                        media_type INTEGER,
                        width INTEGER,
                        height INTEGER,
                        taken_at INTEGER,
                        location INTEGER NOT NULL DEFAULT 0,
                        lat_e7 INTEGER,
                        lon_e7 INTEGER
                    );
                    CREATE INDEX edit_by_post ON edit (post, author, seq);
                    """
            )
        }
        migrator.registerMigration("v7: notifications by post") { db in
            // Erasing a post blanks its notifications' texts: found by post, read or not (the partial index only
            // held unread ones, so every erasure scanned the table).
            try db.execute(
                sql: """
                    DROP INDEX notification_unread;
                    CREATE INDEX notification_post ON notification (post);
                    """
            )
        }
        migrator.registerMigration("v8: groups") { db in
            try db.execute(
                sql: """
                    -- Groups known here: founded by a group record (node, name, open from it), or network groups
                    -- joined with --network (network = 1, no founder). A node that joins by invite knows the group
                    -- before its group record arrives (node and name NULL until then).
                    CREATE TABLE grp (
                        id BLOB PRIMARY KEY,
                        node BLOB,
                        name TEXT,
                        open INTEGER NOT NULL DEFAULT 0,
                        network INTEGER NOT NULL DEFAULT 0
                    );
                    -- Every member record held, as GroupRules reads them.
                    CREATE TABLE membership (
                        record_id BLOB PRIMARY KEY,
                        group_id BLOB NOT NULL,
                        author BLOB NOT NULL,
                        seq INTEGER NOT NULL,
                        action INTEGER NOT NULL,
                        node BLOB NOT NULL,
                        log BLOB NOT NULL,
                        through INTEGER NOT NULL
                    );
                    CREATE INDEX membership_group ON membership (group_id);
                    -- The logs of each group, derived from the two tables above by GroupRules (PROTOCOL.md 5.1):
                    -- removed_through is NULL for a member, else the last sequence of the log that stays valid.
                    CREATE TABLE member (
                        log BLOB PRIMARY KEY,
                        group_id BLOB NOT NULL,
                        node BLOB NOT NULL,
                        admin INTEGER NOT NULL,
                        removed_through INTEGER
                    );
                    CREATE INDEX member_group ON member (group_id);
                    CREATE INDEX member_node ON member (node);
                    -- This node's log keys: derived from the identity seed and `salt` (the private keys are never
                    -- stored). group_id is NULL while a join is under way.
                    CREATE TABLE log_key (
                        public BLOB PRIMARY KEY,
                        salt BLOB NOT NULL,
                        group_id BLOB,
                        created_at INTEGER NOT NULL
                    );
                    -- Invites this node made: single use, until expires_at.
                    CREATE TABLE invite (
                        id BLOB PRIMARY KEY,
                        secret BLOB NOT NULL,
                        group_id BLOB NOT NULL,
                        created_at INTEGER NOT NULL,
                        expires_at INTEGER NOT NULL,
                        used_at INTEGER,
                        used_by BLOB
                    );
                    """
            )
        }
        migrator.registerMigration("v9: join requests, blocked authors") { db in
            try db.execute(
                sql: """
                    -- Nodes that asked this node to let them join (PROTOCOL.md 7.8.3), one row per node: the log key
                    -- it asked to have added (the newest), where it came from, and whether an admin denied it.
                    CREATE TABLE join_request (
                        node BLOB PRIMARY KEY,
                        log BLOB NOT NULL,
                        name TEXT,
                        host TEXT NOT NULL,
                        port INTEGER NOT NULL,
                        first_asked_at INTEGER NOT NULL,
                        asked_at INTEGER NOT NULL,
                        denied_at INTEGER
                    );
                    -- Authors this node blocked (local, never sent): the log key named, and its node where known, so
                    -- that every log of that node is blocked, including ones it makes later.
                    CREATE TABLE blocked (
                        author BLOB PRIMARY KEY,
                        node BLOB,
                        name TEXT,
                        blocked_at INTEGER NOT NULL
                    );
                    CREATE INDEX blocked_node ON blocked (node);
                    -- What a log key waiting for its group was made for (an invite's id, or the address asked): a
                    -- join tried again with the same invite, after its JOINED was lost, proves the same key.
                    ALTER TABLE log_key ADD COLUMN pending_for BLOB;
                    """
            )
        }
        migrator.registerMigration("v10: posts found by id in the log, records of kinds this node does not know") {
            db in
            try db.execute(
                sql: """
                    -- A post's delete erases the comments on it (PROTOCOL.md 2.6): the post is judged by its record,
                    -- which may be held as a header alone (no row in `post`). Posts only: no other record is looked up
                    -- by id in the log.
                    CREATE INDEX record_post ON record (id) WHERE kind = 2;
                    -- Records of kinds this node does not know (PROTOCOL.md 2.8), shown nowhere: found by id for a
                    -- delete of them, and by the post they go with (context) for a delete of that post.
                    CREATE TABLE opaque_record (
                        id BLOB PRIMARY KEY NOT NULL,
                        author BLOB NOT NULL,
                        seq INTEGER NOT NULL,
                        code INTEGER NOT NULL,
                        context BLOB
                    ) WITHOUT ROWID;
                    CREATE INDEX opaque_record_context ON opaque_record (context) WHERE context IS NOT NULL;
                    """
            )
        }
        migrator.registerMigration("v11: admins the founder removed") { db in
            try db.execute(
                sql: """
                    -- An admin now, or one the founder removed: its member records up to removed_through stand
                    -- (PROTOCOL.md 5.1).
                    ALTER TABLE member ADD COLUMN was_admin INTEGER NOT NULL DEFAULT 0;
                    UPDATE member SET was_admin = admin;
                    """
            )
            // Every group's members derived again from its records, so that an admin the founder removed before this
            // migration counts as one too, as on a node that never ran it.
            for group in try Data.fetchAll(db, sql: "SELECT id FROM grp") {
                try Ingest.refreshMembers(of: GroupID(unchecked: group), db)
            }
        }
        migrator.registerMigration("v12: reactions") { db in
            try db.execute(
                sql: """
                    -- Reactions (PROTOCOL.md 2.9) held whole: one row per record. An author's current reaction to a
                    -- target is its latest (created_at, id); what counts is decided when counts are read.
                    CREATE TABLE reaction (
                        id BLOB PRIMARY KEY NOT NULL,
                        author BLOB NOT NULL,
                        seq INTEGER NOT NULL,
                        post BLOB NOT NULL,
                        target BLOB NOT NULL,
                        emoji INTEGER NOT NULL,
                        created_at INTEGER NOT NULL
                    ) WITHOUT ROWID;
                    CREATE INDEX reaction_target ON reaction (target, author);
                    CREATE INDEX reaction_log ON reaction (author, seq);
                    """
            )
            // No node stored a record of kind 13 before: version-2 sessions leave kinds to come out (§2.8).
        }
        migrator.registerMigration("v13: reactions by post") { db in
            // A post's view reads the reactions to it and to its comments in one query, however many comments.
            try db.execute(sql: "CREATE INDEX reaction_post ON reaction (post)")
        }
        migrator.registerMigration("v14: accounts") { db in
            try db.execute(
                sql: """
                    -- Account records (PROTOCOL.md 2.10) by the account they name.
                    CREATE TABLE account_record (
                        account BLOB NOT NULL,
                        record BLOB NOT NULL,
                        PRIMARY KEY (account, record)
                    ) WITHOUT ROWID;
                    -- Derived from them by the account rule, again after each one is stored: an account's founder
                    -- and recovery key, and its devices (removed = 1: removed, never a device again).
                    CREATE TABLE account (
                        id BLOB PRIMARY KEY NOT NULL,
                        founder BLOB NOT NULL,
                        recovery BLOB
                    ) WITHOUT ROWID;
                    CREATE TABLE account_device (
                        device BLOB NOT NULL,
                        account BLOB NOT NULL,
                        removed INTEGER NOT NULL,
                        PRIMARY KEY (device, account)
                    ) WITHOUT ROWID;
                    CREATE INDEX account_device_account ON account_device (account);
                    -- This node's own name, for itself (its identity key signs only its account log now, 2.10; the
                    -- profile it signed there before stays the name until this is set).
                    CREATE TABLE own_name (
                        node BLOB PRIMARY KEY NOT NULL,
                        name TEXT NOT NULL
                    ) WITHOUT ROWID;
                    """
            )
            // Records of kinds 8 to 10 stored since version 3, before the store applied them.
            try Ingest.indexAccountRecords(db)
        }
        migrator.registerMigration("v15: log declarations") { db in
            try db.execute(
                sql: """
                    -- Log declarations (PROTOCOL.md 2.10, kind 11): a device's log in a group, for its account. The
                    -- members they make are derived into member (5.1, members by account).
                    CREATE TABLE log_declaration (
                        log BLOB PRIMARY KEY NOT NULL,
                        record BLOB NOT NULL,
                        group_id BLOB NOT NULL,
                        account BLOB NOT NULL,
                        device BLOB NOT NULL
                    ) WITHOUT ROWID;
                    CREATE INDEX log_declaration_group ON log_declaration (group_id);
                    CREATE INDEX log_declaration_account ON log_declaration (account);
                    -- Link codes this node made (device link): one new device each, until it expires.
                    CREATE TABLE link_ticket (
                        id BLOB PRIMARY KEY NOT NULL,
                        secret BLOB NOT NULL,
                        created_at INTEGER NOT NULL,
                        expires_at INTEGER NOT NULL,
                        used_at INTEGER,
                        used_by BLOB
                    ) WITHOUT ROWID;
                    """
            )
            try Ingest.indexLogDeclarations(db)
        }
        migrator.registerMigration("v16: owners and removed devices") { db in
            try db.execute(
                sql: """
                    -- The account that owns each log (PROTOCOL.md 4.4), when this node knows one: derived with the
                    -- members. A log with no row is its own owner.
                    CREATE TABLE log_owner (
                        log BLOB PRIMARY KEY NOT NULL,
                        owner BLOB NOT NULL
                    ) WITHOUT ROWID;
                    CREATE INDEX log_owner_owner ON log_owner (owner);
                    -- What the counting removals of a removed device keep of each of its logs (2.10): the smallest
                    -- through among them (0 when one does not list the log). A log of a removed device with no row
                    -- keeps nothing.
                    CREATE TABLE device_cut (
                        account BLOB NOT NULL,
                        device BLOB NOT NULL,
                        log BLOB NOT NULL,
                        through INTEGER NOT NULL,
                        PRIMARY KEY (device, log, account)
                    ) WITHOUT ROWID;
                    CREATE INDEX device_cut_account ON device_cut (account);
                    """
            )
            for account in try Data.fetchAll(db, sql: "SELECT id FROM account") {
                try Ingest.deriveAccount(AccountID(unchecked: account), db)
            }
            for group in try Data.fetchAll(db, sql: "SELECT id FROM grp") {
                try Ingest.refreshMembers(of: GroupID(unchecked: group), db)
            }
        }
        migrator.registerMigration("v17: follow states shared between devices") { db in
            try db.execute(
                sql: """
                    -- Each post's follow state and when it last changed (PROTOCOL.md 7.8.21): the devices of one
                    -- account share them, the later change winning; follow holds the posts followed now.
                    CREATE TABLE follow_state (
                        post BLOB PRIMARY KEY NOT NULL,
                        following INTEGER NOT NULL,
                        changed_at INTEGER NOT NULL
                    ) WITHOUT ROWID;
                    INSERT INTO follow_state (post, following, changed_at) SELECT post, 1, followed_at FROM follow;
                    """
            )
        }
        migrator.registerMigration("v18: the author's thumbnail a photo commits to, memberships by log") { db in
            try db.execute(
                sql: """
                    -- The SHA-256 of the thumbnail the post's photo commits to (PROTOCOL.md 2.5), when it does: a
                    -- thumbnail from a peer with this hash is kept as it is (7.4.19).
                    ALTER TABLE post ADD COLUMN thumb_sha256 BLOB;
                    ALTER TABLE edit ADD COLUMN thumb_sha256 BLOB;
                    -- A log's own membership records (its self-add names its node), read for each log declaration.
                    CREATE INDEX membership_log ON membership (log);
                    """
            )
        }
        migrator.registerMigration("v19: guests") { db in
            try db.execute(
                sql: """
                    -- Guest links (Docs/API.md, "Guests"): an admin opens a group to guests' browsers; each guest
                    -- that proves the secret gets its own account and a log in the group, until the link closes.
                    CREATE TABLE guest_link (
                        id BLOB PRIMARY KEY NOT NULL,
                        secret BLOB NOT NULL,
                        group_id BLOB NOT NULL,
                        created_at INTEGER NOT NULL,
                        expires_at INTEGER NOT NULL,
                        closed_at INTEGER
                    ) WITHOUT ROWID;
                    -- The guests this node let in: the browser's device key, its log in the group (the member
                    -- record this node signed names the device as the log's node), and whether the owner removed
                    -- (1) or blocked (2) it.
                    CREATE TABLE guest (
                        device BLOB PRIMARY KEY NOT NULL,
                        group_id BLOB NOT NULL,
                        log BLOB NOT NULL UNIQUE,
                        link BLOB NOT NULL,
                        name TEXT NOT NULL,
                        joined_at INTEGER NOT NULL,
                        removed INTEGER NOT NULL DEFAULT 0
                    ) WITHOUT ROWID;
                    """
            )
        }
        migrator.registerMigration("v20: small photos in the store") { db in
            try db.execute(
                sql: """
                    -- The bytes of photos of at most 64 KiB that came from peers in PHOTOS (PROTOCOL.md §7.4.27):
                    -- kept here, in the transaction that records them, rather than as one file each. A row here has
                    -- its asset row; erasing the photo deletes both.
                    CREATE TABLE asset_content (
                        sha256 BLOB PRIMARY KEY NOT NULL,
                        content BLOB NOT NULL
                    );
                    """
            )
        }
        migrator.registerMigration("v21: a version of what the photo fetcher looks at") { db in
            // Bumped by every change to what `missingPhotos` reads (live posts' photos, thumbnails and authors, the
            // photos here, the members that give a post its group), in whichever process writes: a look that finds
            // the version it last read keeps its list instead of reading every post again. A table rebuilt by a later
            // migration must create its triggers again.
            var sql = "CREATE TABLE photo_look (version INTEGER NOT NULL); INSERT INTO photo_look VALUES (0);"
            let bump = "BEGIN UPDATE photo_look SET version = version + 1; END;"
            for (name, event) in [
                ("post_insert", "INSERT ON post"), ("post_delete", "DELETE ON post"),
                (
                    "post_update",
                    "UPDATE OF id, author, created_at, photo_sha256, photo_bytes, thumb_sha256, deleted ON post"
                ),
                ("asset_insert", "INSERT ON asset"), ("asset_delete", "DELETE ON asset"),
                ("member_insert", "INSERT ON member"), ("member_delete", "DELETE ON member"),
                ("member_update", "UPDATE OF log, group_id ON member"),
            ] {
                sql += "\nCREATE TRIGGER photo_look_\(name) AFTER \(event) \(bump)"
            }
            try db.execute(sql: sql)
        }
        return migrator
    }

    /// The migration that moved the store to protocol v2's records (header and erasable content).
    static let protocolV2 = "v6: protocol v2 records, erasable content"
}
