<?php

declare(strict_types=1);

namespace OCA\Tamebi\Tests\Unit;

use OCA\Tamebi\Service\Router;
use PHPUnit\Framework\TestCase;

/** Rendezvous routing over several orchestrator instances (issue 15). */
final class RouterTest extends TestCase {
	private const URLS = ['http://tamebi-a:8700', 'http://tamebi-b:8700', 'http://tamebi-c:8700'];

	public function testTheSettingListsInstancesSeparatedByCommasOrSpaces(): void {
		self::assertSame(self::URLS, Router::urls(" http://tamebi-a:8700/,http://tamebi-b:8700\n http://tamebi-c:8700 , http://tamebi-a:8700"));
		self::assertSame(['http://one'], Router::urls('http://one/'));
		self::assertSame([], Router::urls(' , '));
	}

	public function testTheOrderIsAStablePermutationWhateverTheConfiguredOrder(): void {
		$order = Router::order(self::URLS, 'c:alice:conv-1');
		self::assertEqualsCanonicalizing(self::URLS, $order);
		self::assertSame($order, Router::order(array_reverse(self::URLS), 'c:alice:conv-1'));
		self::assertSame($order, Router::order(self::URLS, 'c:alice:conv-1'));
	}

	public function testConversationsSpreadEvenly(): void {
		$counts = array_fill_keys(self::URLS, 0);
		for ($i = 0; $i < 3000; $i++) {
			$counts[Router::order(self::URLS, "c:alice:conv-$i")[0]]++;
		}
		foreach ($counts as $url => $n) {
			self::assertGreaterThan(850, $n, "$url gets its share: " . json_encode($counts));
		}
	}

	public function testRemovingAnInstanceMovesOnlyItsConversationsToTheirNextChoice(): void {
		$survivors = [self::URLS[0], self::URLS[2]];
		for ($i = 0; $i < 500; $i++) {
			$key = "c:bob:conv-$i";
			$full = Router::order(self::URLS, $key);
			$reduced = Router::order($survivors, $key);
			if ($full[0] !== self::URLS[1]) {
				self::assertSame($full[0], $reduced[0], "$key stays where it was");
			} else {
				self::assertSame($full[1], $reduced[0], "$key moves to its failover instance");
			}
		}
	}

	public function testTheRoutingKeyIsTheConversationOrElseTheUser(): void {
		self::assertSame('c:alice:c-1', Router::keyFor('/v1/chat', '{"id":"c-1","messages":[]}', 'alice'));
		self::assertSame('c:alice:c_2', Router::keyFor('/v1/chat/c_2/stream', '', 'alice'));
		// A stop goes where the conversation's turn runs.
		self::assertSame('c:alice:c_2', Router::keyFor('/v1/chat/c_2/stop', '', 'alice'));
		self::assertSame('u:alice', Router::keyFor('/v1/chat/c_2/other', '', 'alice'));
		self::assertSame('c:alice:c3', Router::keyFor('/v1/conversations/c3', '', 'alice'));
		self::assertSame('u:alice', Router::keyFor('/v1/conversations', '', 'alice'));
		self::assertSame('u:alice', Router::keyFor('/v1/memory', '', 'alice'));
		self::assertSame('u:alice', Router::keyFor('/v1/chat', 'not json', 'alice'));
		self::assertSame('u:alice', Router::keyFor('/v1/conversations/../x', '', 'alice'));
		// Another user's "c-1" is another conversation, routed on its own.
		self::assertSame('c:bob:c-1', Router::keyFor('/v1/chat', '{"id":"c-1"}', 'bob'));
	}
}
