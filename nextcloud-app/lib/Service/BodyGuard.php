<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service;

use OCA\Tamebi\Exception\ProxyError;

/**
 * Checks a browser's JSON body before it is signed and forwarded.
 * G1: a body that names a user (top-level `uid`, `user` or `userId`) is an attempt to choose one,
 * so it is refused with 400 rather than ignored. Also refuses bodies that are not a JSON object
 * or are too large, so nothing malformed is ever signed.
 * It must never rewrite the body: the bytes checked are the bytes signed and sent.
 */
final class BodyGuard {
	public const MAX_BYTES = 1048576;
	private const IDENTITY_FIELDS = ['uid', 'user', 'userId'];

	/** @throws ProxyError 400 or 413 */
	public static function check(string $body): void {
		if (strlen($body) > self::MAX_BYTES) {
			throw ProxyError::tooLarge('request body of ' . strlen($body) . ' bytes');
		}
		try {
			$decoded = json_decode($body, false, 512, JSON_THROW_ON_ERROR);
		} catch (\JsonException $e) {
			throw ProxyError::badRequest('request body is not JSON: ' . $e->getMessage());
		}
		if (!$decoded instanceof \stdClass) {
			throw ProxyError::badRequest('request body is not a JSON object');
		}
		foreach (self::IDENTITY_FIELDS as $field) {
			if (property_exists($decoded, $field)) {
				throw ProxyError::badRequest("request body names a user in '$field' (G1)");
			}
		}
	}

	/** Conversation ids are chosen by the client; only this alphabet may reach a URL path. */
	public static function checkFactId(string $id): void {
		if (preg_match('/^[1-9][0-9]{0,17}$/D', $id) !== 1) {
			throw ProxyError::badRequest('malformed memory fact id');
		}
	}

	public static function checkConversationId(string $id): void {
		if (preg_match('/^[A-Za-z0-9_-]{1,64}$/D', $id) !== 1) {
			throw ProxyError::badRequest('malformed conversation id');
		}
	}
}
