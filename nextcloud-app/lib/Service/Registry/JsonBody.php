<?php

declare(strict_types=1);

namespace OCA\Tamebi\Service\Registry;

use OCA\Tamebi\Exception\ProxyError;
use OCA\Tamebi\Service\RequestBody;

/**
 * The registry routes' raw JSON body as an object (issue #30). What the orchestrator is sent is
 * rebuilt from its checked fields, never passed through.
 */
final class JsonBody {
	/** @return array<string, mixed> */
	public static function read(RequestBody $body): array {
		try {
			$raw = $body->read();
		} catch (ProxyError) {
			throw RegistryError::invalid('The request body is too large.');
		}
		$decoded = json_decode($raw === '' ? '{}' : $raw, true);
		if (!is_array($decoded) || ($decoded !== [] && array_is_list($decoded))) {
			throw RegistryError::invalid('The body must be a JSON object.');
		}
		return $decoded;
	}
}
