//! The start-up checks, one registry: each check's id (what `config.start_problems[].check`
//! holds and a rule compares with) is written once, as its variant's name in kebab case, and
//! its documentation (what the server does, and which function of ClickHouse's source throws)
//! is the variant's doc comment, printed on the page of each rule that reads it.

use strum::{EnumMessage, IntoEnumIterator};

/// One check of the start-up path the offline audit mirrors.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    strum::EnumIter,
    strum::EnumString,
    strum::IntoStaticStr,
    strum::EnumMessage,
)]
#[strum(serialize_all = "kebab-case")]
pub enum StartCheck {
    /// The users config named by `<users_config>` (or `<user_directories><users_xml><path>`)
    /// must exist: `AccessControl::addUsersConfigStorage` (src/Access/AccessControl.cpp)
    /// throws FILE_DOESNT_EXIST while setting up access control, and the server stops.
    UsersConfigMissing,
    /// With neither `<users_config>` nor `<user_directories>`, the server reads its users
    /// from the main config itself, not from a users.xml lying beside it
    /// (`AccessControl::addStoragesFromMainConfig`, src/Access/AccessControl.cpp); the
    /// default profile is then not found and the server stops (THERE_IS_NO_PROFILE).
    UsersReadFromMainConfig,
    /// The default profile (`<default_profile>`, else `default`) must be a profile of the
    /// users config: `SettingsProfilesCache::setDefaultProfileName`
    /// (src/Access/SettingsProfilesCache.cpp) throws THERE_IS_NO_PROFILE.
    DefaultProfileMissing,
    /// A user's `<profile>` must name a settings profile of the users config: `parseUser`
    /// (src/Access/UsersConfigAccessStorage.cpp) throws THERE_IS_NO_PROFILE.
    UserProfileMissing,
    /// Each `<networks><ip>` of a user must be an address or a subnet (`addr`, `addr/prefix`,
    /// `addr/mask`), and each element of `<networks>` a pattern type (`ip`, `host`,
    /// `host_regexp`, ...): `parseUser` (src/Access/UsersConfigAccessStorage.cpp, through
    /// `AllowedClientHosts::addSubnet`) throws CANNOT_LOAD_CONFIG or
    /// UNKNOWN_ADDRESS_PATTERN_TYPE.
    NetworkIpInvalid,
    /// A user of the users config has no authentication element (`password`,
    /// `password_sha256_hex`, ..., `no_password`): `parseUser`
    /// (src/Access/UsersConfigAccessStorage.cpp) throws BAD_ARGUMENTS.
    UserAuthMissing,
    /// A user has more than one authentication element (`<password>` beside `<no_password>`,
    /// ...): `parseUser` (src/Access/UsersConfigAccessStorage.cpp) throws BAD_ARGUMENTS.
    UserAuthAmbiguous,
    /// A plaintext `<password>` while the server config sets `allow_plaintext_password` to
    /// false, or an empty password or `<no_password>` while it sets `allow_no_password` to
    /// false: `parseUser` (src/Access/UsersConfigAccessStorage.cpp) throws BAD_ARGUMENTS
    /// ("Authentication type ... is not allowed").
    UserAuthNotAllowed,
    /// `<password_sha256_hex>` must be 64 hex digits, `<password_double_sha1_hex>` 40:
    /// `parseUser` (src/Access/UsersConfigAccessStorage.cpp, through
    /// `AuthenticationData::setPasswordHashHex`) throws BAD_ARGUMENTS.
    UserPasswordHashInvalid,
    /// A user with `<grants>` may have none of `allow_databases`, `allow_dictionaries`,
    /// `access_management`, `named_collection_control`, `show_named_collections`,
    /// `show_named_collections_secrets`: `parseUser`
    /// (src/Access/UsersConfigAccessStorage.cpp) throws BAD_ARGUMENTS.
    UserGrantsWithOtherAccess,
    /// A profile's `<profile>` (the profile it inherits) must name a profile of the users
    /// config: `parseSettingsProfile` (src/Access/UsersConfigAccessStorage.cpp) throws
    /// THERE_IS_NO_PROFILE.
    ProfileParentMissing,
    /// A profile setting's value must parse as the setting's type (a number type given no
    /// digit, a Bool given no boolean word): `parseSettingsProfile`
    /// (src/Access/UsersConfigAccessStorage.cpp, through `Settings::checkCanSet`) throws
    /// CANNOT_PARSE_INPUT_ASSERTION_FAILED.
    ProfileSettingUnparsable,
    /// Each setting under a profile's `<constraints>` must be one the server knows (or start
    /// with a prefix of `custom_settings_prefixes`): `parseSettingsProfile`
    /// (src/Access/UsersConfigAccessStorage.cpp, through `parseSettingsConstraints`) throws
    /// UNKNOWN_SETTING.
    ProfileConstraintUnknownSetting,
    /// A quota interval's `<duration>` must be an integer number of seconds: `parseQuota`
    /// (src/Access/UsersConfigAccessStorage.cpp) throws CANNOT_LOAD_CONFIG.
    QuotaDurationInvalid,
    /// A quota interval's limits (`queries`, `errors`, `result_rows`, `read_bytes`, ...) must
    /// be whole numbers, `execution_time` a number of seconds: `parseQuota`
    /// (src/Access/UsersConfigAccessStorage.cpp, through `QuotaTypeInfo::stringToValue`)
    /// throws CANNOT_PARSE.
    QuotaLimitUnparsable,
    /// A server setting at the config's root must parse as its type:
    /// `ServerSettings::loadSettingsFromConfig` (src/Core/ServerSettings.cpp) throws
    /// CANNOT_PARSE_INPUT_ASSERTION_FAILED.
    ServerSettingUnparsable,
    /// Every element of `<merge_tree>` must be a MergeTree setting:
    /// `MergeTreeSettings::loadFromConfig` (src/Storages/MergeTree/MergeTreeSettings.cpp)
    /// throws UNKNOWN_SETTING.
    MergeTreeUnknownSetting,
    /// A `<merge_tree>` setting's value must parse as its type:
    /// `MergeTreeSettings::loadFromConfig` (src/Storages/MergeTree/MergeTreeSettings.cpp)
    /// throws CANNOT_PARSE_INPUT_ASSERTION_FAILED.
    MergeTreeSettingUnparsable,
    /// Each port (`http_port`, `tcp_port`, `interserver_http_port`, `mysql_port`, ...) must
    /// be an integer from 0 to 65535: `Server::main` and `Server::createServers`
    /// (programs/server/Server.cpp) stop on it.
    PortInvalid,
    /// `interserver_http_port` and `interserver_https_port` may not both be set:
    /// `Server::main` (programs/server/Server.cpp) throws EXCESSIVE_ELEMENT_IN_CONFIG.
    InterserverBothPorts,
    /// A `<listen_host>` written as a dotted quad must be an IPv4 address; another fails to
    /// resolve, and `Server::createServer` (programs/server/Server.cpp) stops with
    /// NETWORK_ERROR.
    ListenHostInvalid,
    /// A wildcard `<listen_host>` (`::`, or `0.0.0.0` for IPv4 addresses) beside an address it
    /// already covers: the second bind fails with "Address already in use" in
    /// `Server::createServer` (programs/server/Server.cpp), unless `listen_try` or
    /// `listen_reuse_port` is set.
    ListenHostOverlap,
    /// A system log section (`<query_log>`, ...) with its own `<engine>` may not also have
    /// `<partition_by>`, `<ttl>`, `<order_by>`, `<storage_policy>` or `<settings>`:
    /// `SystemLogs` (src/Interpreters/SystemLog.cpp) throws BAD_ARGUMENTS.
    SystemLogEngineWithParameters,
    /// `<logger><level>` and `<text_log><level>` must be a log level (none, fatal, critical,
    /// error, warning, notice, information, debug, trace or test, in any case, or 1 to 9),
    /// not empty: `Loggers::buildLoggers` (src/Loggers/Loggers.cpp, through Poco's
    /// `Logger::parseLevel`) throws.
    LogLevelInvalid,
    /// Each replica of a `<remote_servers>` cluster must have a `<host>`:
    /// `Cluster::Address::Address` (src/Interpreters/Cluster.cpp) throws CANNOT_LOAD_CONFIG.
    ClusterReplicaWithoutHost,
    /// A cluster must have shards (or nodes), each shard a replica, no element the cluster
    /// does not know, and each replica a `<port>` unless the server has a `<tcp_port>`:
    /// `Cluster::Cluster` (src/Interpreters/Cluster.cpp) throws CANNOT_LOAD_CONFIG.
    ClusterDefinitionInvalid,
    /// A disk's `<type>` must be a registered disk type: `DiskFactory::create`
    /// (src/Disks/DiskFactory.cpp) throws UNKNOWN_ELEMENT_IN_CONFIG.
    DiskTypeUnknown,
    /// A local disk other than `default` must have a non-empty `<path>`, and a cache disk a
    /// `<path>`: `loadDiskLocalConfig` (src/Disks/DiskLocal.cpp) and `registerDiskCache`
    /// (src/Disks/ObjectStorages/Cached/registerDiskCache.cpp) stop the server.
    DiskPathMissing,
    /// A local disk's `<path>` must end with `/`: `loadDiskLocalConfig`
    /// (src/Disks/DiskLocal.cpp) throws UNKNOWN_ELEMENT_IN_CONFIG.
    DiskPathWithoutSlash,
    /// The `default` disk takes its path from the server's `<path>`, never from
    /// `<storage_configuration>`: `loadDiskLocalConfig` (src/Disks/DiskLocal.cpp) throws
    /// UNKNOWN_ELEMENT_IN_CONFIG.
    DefaultDiskPath,
    /// Two local disks may not share a path: `registerDiskLocal` (src/Disks/DiskLocal.cpp)
    /// throws BAD_ARGUMENTS.
    DisksSamePath,
    /// An S3 disk (`s3`, `s3_plain`, `s3_plain_rewritable`, or `object_storage` of
    /// `object_storage_type` s3) must have an `<endpoint>`: `registerS3ObjectStorage`
    /// (src/Disks/ObjectStorages/ObjectStorageFactory.cpp, through `getEndpoint`) throws
    /// Poco::NotFoundException.
    ObjectDiskEndpointMissing,
    /// An S3 disk's `<endpoint>` may not end with `//` (an empty key): `S3::URI::URI`
    /// (src/IO/S3/URI.cpp) throws BAD_ARGUMENTS.
    S3EndpointEmptyKey,
    /// A cache disk's `<disk>` must name a disk declared before it that is an object storage
    /// (or another cache): `registerDiskCache`
    /// (src/Disks/ObjectStorages/Cached/registerDiskCache.cpp) throws BAD_ARGUMENTS.
    CacheDiskTargetInvalid,
    /// A cache disk's elements must be cache settings (a typo of one is refused):
    /// `FileCacheSettings::loadFromConfig` (src/Interpreters/Cache/FileCacheSettings.cpp)
    /// throws UNKNOWN_SETTING.
    CacheDiskSettingUnknown,
    /// A cache disk must have `<max_size>` or `<max_size_ratio_to_total_space>`:
    /// `FileCacheSettings::loadFromConfig` (src/Interpreters/Cache/FileCacheSettings.cpp)
    /// throws BAD_ARGUMENTS.
    CacheDiskWithoutSize,
    /// An encrypted disk must have a key, each of its algorithm's size (16, 24 or 32 bytes
    /// for AES_128_CTR, AES_192_CTR, AES_256_CTR): `parseDiskEncryptedSettings`
    /// (src/Disks/DiskEncrypted.cpp) throws BAD_ARGUMENTS.
    EncryptedDiskKeyInvalid,
}

impl StartCheck {
    /// Its id, as `config.start_problems[].check` holds it.
    pub fn id(self) -> &'static str {
        self.into()
    }

    /// What the server checks, and where in its source (the variant's documentation).
    pub fn doc(self) -> &'static str {
        self.get_documentation().map_or("", str::trim_end)
    }

    /// The check of this id.
    pub fn parse(id: &str) -> Option<StartCheck> {
        id.parse().ok()
    }

    /// Every check.
    pub fn all() -> impl Iterator<Item = StartCheck> {
        StartCheck::iter()
    }
}

impl std::fmt::Display for StartCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_check_has_a_kebab_id_and_a_doc_naming_the_source() {
        for check in StartCheck::all() {
            let id = check.id();
            assert!(id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'), "{id}");
            assert_eq!(StartCheck::parse(id), Some(check));
            assert!(check.doc().contains("src/") || check.doc().contains("programs/"), "{id}: {}", check.doc());
        }
        assert_eq!(StartCheck::S3EndpointEmptyKey.id(), "s3-endpoint-empty-key");
        assert_eq!(StartCheck::parse("no-such-check"), None);
    }
}
